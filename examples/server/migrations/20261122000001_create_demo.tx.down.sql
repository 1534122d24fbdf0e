DROP TABLE deskkit_demo_tasks;
--bun:split
DROP TABLE deskkit_demo_sprints;
