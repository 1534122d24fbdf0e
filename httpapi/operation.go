package httpapi

// Doc is what the OpenAPI document says about an operation beyond its Go
// types: the words, the errors it answers besides those every operation
// answers, and an example request and answer (for readers, and for
// contract testers such as Dredd and Schemathesis).
type Doc struct {
	Tag         string // the group of the operation: "trash", "user", "channel"
	Summary     string
	Description string
	OK          string // what a success means: the 200's description

	// Errors are the error keys (of the error table) the operation answers
	// besides the ones every authenticated operation answers (see
	// commonErrors), each with what it means here; a key of a common error
	// given here replaces its meaning.
	Errors []ErrorDoc

	// Params documents the parameters Op derives from the request struct:
	// by Name, their Description, Example and Schema (see Param).
	Params []Param

	// Example is a request that succeeds and its answer's data.
	Example Example
	// More are further request bodies worth showing, by name.
	More map[string]Example
}

// With returns op documented by d.
func (op Operation) With(d *Doc) Operation {
	op.Doc = d
	return op
}

// ErrorDoc is one error an operation answers.
type ErrorDoc struct {
	Key  string // a key of the error table, such as KeyNotFound
	When string // what it means for this operation; the table's own words if ""
	// Name, if set, describes the answer once, as a named response of the
	// document that every operation giving the same ErrorDoc refers to;
	// it must be the only error of its status there.
	Name string
}

// Example is an example request and the data of its success envelope.
type Example struct {
	Summary string
	Body    any // the request body; nil if the operation takes none
	Data    any // the success envelope's data
}
