// Package texts holds the texts of the messages the Verifier of
// package verify sends: a Template for the codes of a bizKey, or for the
// notice to an old address after a change, written in Go's template
// language with Data as the data.
//
// verify.Config takes them: Templates (English, by bizKey), Notice
// (English) and Locales (other languages). Fields left empty keep the
// shipped texts, in English and Simplified Chinese (zh-CN):
//
//	cfg := &verify.Config{
//		Templates: map[verify.BizKey]texts.Template{
//			verify.PasswordUpdate: {SMS: `{{.Code}} resets your {{.AppName}} password. Valid {{.Minutes}} minutes.`},
//		},
//	}
//
// verify.New parses every template and runs it once on sample data: one
// that does not parse, or names a field Data lacks, is an error of New.
//
// A code is written in the language of its request's context (its
// deskkit.Localizer; the HTTP API sets it): the templates of that
// language and script (zh-CN's for zh-Hans; none for zh-TW unless
// configured), else English's, also when the context carries no language;
// a notice in the language of the request that changed the address.
package texts

// Template is the text of the messages of one bizKey, written in Go's
// template language with Data as the data. SMS, Subject and Text are
// text/template; HTML is html/template (the same language, with escaping
// suited to HTML, so that nothing in the data can inject markup). Empty
// fields fall back to the defaults.
type Template struct {
	SMS     string
	Subject string
	Text    string
	HTML    string
}

// Data is what a template may use.
type Data struct {
	AppName string
	BizKey  string // "MODIFY_MOBILE"
	Purpose string // what the code is for, in the template's language: "change your mobile number", "修改手机号"
	Code    string // "" in a notice
	Minutes int    // how long the code is valid
	// NewAddress is, in a notice, the new address, masked:
	// "+86*******8000", "a***@example.com".
	NewAddress string
}
