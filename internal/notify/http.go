package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/internal/safehttp"
)

// Post sends body to u and returns the reply, if any, and the failure
// when its status is not 2xx or there was none; who names the far end in
// the failure's reason.
func (s *Sender) Post(ctx context.Context, who deskkit.Text, u *url.URL, h http.Header, body []byte) (*safehttp.Reply, *Failure) {
	// u is parsed already: the request takes it as it is, not its text
	// to parse again (and u may be shared by the sends of a batch: nothing
	// here changes it).
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "", bytes.NewReader(body))
	if err != nil {
		return nil, &Failure{Reason: deskkit.Textf("the request could not be built"), Err: err}
	}
	req.URL, req.Host = u, u.Host
	req.Header = h
	// The wall clock, not s.Now: this measures the wait for a timeout's
	// reason; s.Now is what the far end is told.
	start := time.Now()
	r, err := s.HTTP.Do(req)
	if err != nil {
		return nil, transportFailure(err, time.Since(start))
	}
	if r.Status < 200 || r.Status > 299 {
		return r, s.statusFailure(who, u, r)
	}
	return r, nil
}

// Marshal is json.Marshal without escaping <, > and &: the text is
// markdown, and the robots count bytes.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
