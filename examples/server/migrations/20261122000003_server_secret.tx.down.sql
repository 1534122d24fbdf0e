DROP TABLE deskkit_server_secret;
