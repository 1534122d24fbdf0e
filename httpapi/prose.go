package httpapi

import "strings"

// prose is an operation's description as its source writes it, wrapped in
// a raw string: each line trimmed, the lines of a paragraph joined with a
// space, and paragraphs (split by a blank line) by a blank line, as the
// document gives them, with the kinds of channel filled in (kindDocs).
func prose(s string) string {
	var paras []string
	var p []string
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			if len(p) > 0 {
				paras = append(paras, strings.Join(p, " "))
				p = nil
			}
			continue
		}
		p = append(p, line)
	}
	if len(p) > 0 {
		paras = append(paras, strings.Join(p, " "))
	}
	return kindDocs.Replace(strings.Join(paras, "\n\n"))
}

// markdown is prose whose code spans are marked with ‵ (a reversed
// prime, which a raw string can hold), written as Markdown's backticks.
func markdown(s string) string {
	return strings.ReplaceAll(prose(s), "‵", "`")
}
