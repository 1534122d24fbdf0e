package outbox

// Tables are the tables Migrate creates, which the constructors of the
// services over the outbox (channel.New, verify.New) check for; a test of
// each compares them with what Migrate leaves in the catalog.
var Tables = []string{"deskkit_outbox_events", "deskkit_outbox_deliveries", "deskkit_outbox_attempts", "deskkit_outbox_targets", "deskkit_outbox_workers", "deskkit_outbox_bodies"}
