DROP TABLE deskkit_channel_limits;
--bun:split
DROP TABLE deskkit_channel_counts;
--bun:split
DROP TABLE deskkit_channels;
