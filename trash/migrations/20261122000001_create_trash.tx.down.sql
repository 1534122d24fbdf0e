DROP TABLE deskkit_trash;
