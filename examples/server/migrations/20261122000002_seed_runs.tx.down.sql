DROP TABLE deskkit_demo_seeds;
