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

// claimParams and recordParams are the types of the functions'
// parameters: claimPostgres's and recordPostgres's arguments, in order.
var (
	claimParams = []string{"varchar", "bigint", "integer", "integer", "integer", "text", "bigint", "varchar",
		"bigint", "bigint", "bigint", "integer", "bigint[]", "integer", "double precision", "bigint"}
	recordParams = []string{"text", "text", "varchar", "integer", "integer"}
)

// claimFunc is the call of the claim's function with claimPostgres's
// arguments, and recordCall a statement that calls the flush's with
// recordPostgres's.
var (
	claimFunc  = funcCall("deskkit_outbox_claim", claimParams)
	recordCall = "SELECT * FROM " + funcCall("deskkit_outbox_record", recordParams)
)

// funcCall is a call of the function name whose parameters have the
// types params, each argument (?0, ?1...) cast to its type.
func funcCall(name string, params []string) string {
	args := make([]string, len(params))
	for i, t := range params {
		args[i] = fmt.Sprintf("CAST(?%d AS %s)", i, t)
	}
	return name + "(" + strings.Join(args, ", ") + ")"
}

// claimCall is the statement that claims on PostgreSQL: a call of the
// claim's function, with state (Config.TargetState) read beside the
// function's columns for each row, which it names c.
func claimCall(state string) string {
	if state == "" {
		return "SELECT * FROM " + claimFunc
	}
	return "SELECT c.*, " + state + " AS target_state FROM " + claimFunc + " AS c"
}

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
	fn := func(name string, params []string, returns, body string) {
		fmt.Fprintf(&b, "CREATE OR REPLACE FUNCTION %s(%s)\nRETURNS TABLE (%s)\nLANGUAGE plpgsql VOLATILE AS $fn$\n#variable_conflict use_column\nBEGIN\nRETURN QUERY %s;\nEND\n$fn$;\n",
			name, strings.Join(params, ", "), returns, numbered(body))
	}
	fn("deskkit_outbox_claim", claimParams,
		`id bigint, tenant_id bigint, event_id varchar, kind varchar, target_id bigint, payload text, attempts integer, step integer,
  not_before_ms double precision, rate double precision, has_event boolean, event_type varchar, occurred_at_ms bigint,
  title text, body text, data text, messages text, last_tenant_id bigint, last_target_id bigint, found integer,
  capped boolean, "full" boolean`,
		claimPostgres)
	b.WriteString("--bun:split\n")
	fn("deskkit_outbox_record", recordParams,
		"id bigint, tenant_id bigint, target_id bigint, in_flight_limit double precision",
		pg.recordPostgres())
	return b.String()
}
