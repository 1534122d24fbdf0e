package httpapi

import (
	"regexp"
	"strconv"

	"github.com/deskkit/deskkit"
)

// canonicalInt is the one spelling of an integer: decimal digits, no plus
// sign, no leading zero, a minus sign only before a digit other than 0.
var canonicalInt = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)

// misspelt reports whether s is an integer of int64 written other than
// canonically: +5, 05, -0.
func misspelt(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil && !canonicalInt.MatchString(s)
}

// errMisspelt is the answer to an integer written other than canonically.
func errMisspelt(field string) error {
	return deskkit.Invalid(field, "must be written as plain decimal digits, without a sign, leading zeros or escapes")
}

// parseInteger reads an int64 written canonically, as every integer the
// API takes is: a filter's value, an id. +42 and 042 are refused as
// misspelt rather than read as 42, so that no rule on the text (a proxy's,
// a firewall's, a log search) can be sidestepped by another spelling.
func parseInteger(field, s string) (int64, error) {
	if misspelt(s) {
		return 0, errMisspelt(field)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, deskkit.Invalid(field, "must be an integer")
	}
	return n, nil
}

// ParseID reads an id as every route of the API takes one, in a path, a
// query, a filter or a body (a channel id written as a string): a positive int64 written as plain decimal digits, with
// no sign, no leading zero and no escape. Anything else is an
// *deskkit.InputError naming field: "must be written as plain decimal
// digits, without a sign, leading zeros or escapes" for +42, 042 and -0,
// "must be a positive integer" for the rest (0, -1, abc, and a number
// beyond int64). A host's own routes (Server.Handle) read their ids with
// it, so that an id has one spelling on every route of the server.
func ParseID(field, s string) (int64, error) {
	if misspelt(s) {
		return 0, errMisspelt(field)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, deskkit.Invalid(field, "must be a positive integer")
	}
	return n, nil
}
