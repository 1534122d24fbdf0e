package outbox

import (
	"fmt"
	"strings"
)

// On PostgreSQL the claim (claimPostgres) and the flush (recordPostgres)
// run inside two PL/pgSQL functions, deskkit_outbox_claim and
// deskkit_outbox_record, which a migration defines with those statements
// as their bodies. PostgreSQL keeps the plans of a function's statements
// for the life of its server session, so a claim or a flush is parsed and
// planned once per session, as a prepared statement would be, and its
// call is a short statement whose planning costs next to nothing. That
// holds through a pooler that keeps no session of the client's
// (PgBouncer in transaction mode, Config.PlainStatements): the pooler
// keeps its server sessions, and with them the functions' plans. Written
// out as plain statements, planning them took half of a one-webhook
// drain's time. On a direct pool the call itself is prepared too.
//
// The functions' bodies are the statements of this package as they were
// when a migration last defined them: a change to claimPostgres,
// recordPostgres or flowUpsert takes a new migration that defines the
// functions again, which TestFunctionsMigrated asks for with the text to
// write (functionsSQL). One that changes their parameters or columns
// drops them first: CREATE OR REPLACE cannot change a function's result
// type, and would add a function beside one of other parameters.

// claimCall calls deskkit_outbox_claim with claimPostgres's arguments.
const claimCall = `SELECT * FROM deskkit_outbox_claim(CAST(?0 AS varchar), CAST(?1 AS bigint), CAST(?2 AS integer),
  CAST(?3 AS integer), CAST(?4 AS integer), CAST(?5 AS text), CAST(?6 AS bigint), CAST(?7 AS varchar), CAST(?8 AS bigint),
  CAST(?9 AS bigint), CAST(?10 AS bigint), CAST(?11 AS integer), CAST(?12 AS bigint[]), CAST(?13 AS integer),
  CAST(?14 AS double precision), CAST(?15 AS bigint))`

// recordCall calls deskkit_outbox_record with recordPostgres's arguments.
const recordCall = `SELECT * FROM deskkit_outbox_record(CAST(?0 AS text), CAST(?1 AS text), CAST(?2 AS varchar),
  CAST(?3 AS integer), CAST(?4 AS integer))`

// functionsSQL is the PostgreSQL part of the migration that defines
// deskkit_outbox_claim and deskkit_outbox_record from the statements of
// this build. Their parameters are those of the statements, in order;
// their columns are the statements' (use_column: a name that is both a
// column and one of the function's result columns is the column, as in
// the statement run alone).
func functionsSQL() string {
	pg := &Worker{pg: true}
	var b strings.Builder
	b.WriteString(`-- The claim and the flush on PostgreSQL, as functions whose plans
-- PostgreSQL keeps for the server session, also through a pooler in
-- transaction mode (internal/outbox/functions.go). Their bodies are
-- claimPostgres and recordPostgres; TestFunctionsMigrated checks that the
-- latest migration defining them holds the build's statements.
`)
	fn := func(name, params, returns, body string) {
		fmt.Fprintf(&b, "CREATE OR REPLACE FUNCTION %s(%s)\nRETURNS TABLE (%s)\nLANGUAGE plpgsql VOLATILE AS $fn$\n#variable_conflict use_column\nBEGIN\nRETURN QUERY %s;\nEND\n$fn$;\n",
			name, params, returns, numbered(body))
	}
	fn("deskkit_outbox_claim",
		"varchar, bigint, integer, integer, integer, text, bigint, varchar, bigint, bigint, bigint, integer, bigint[], integer, double precision, bigint",
		`id bigint, tenant_id bigint, event_id varchar, kind varchar, target_id bigint, payload text, attempts integer, step integer,
  not_before_ms double precision, rate double precision, has_event boolean, event_type varchar, occurred_at_ms bigint,
  title text, body text, data text, messages text, last_tenant_id bigint, last_target_id bigint, found integer,
  capped boolean, "full" boolean`,
		claimPostgres)
	b.WriteString("--bun:split\n")
	fn("deskkit_outbox_record", "text, text, varchar, integer, integer",
		"id bigint, tenant_id bigint, target_id bigint, in_flight_limit double precision",
		pg.recordPostgres())
	return b.String()
}
