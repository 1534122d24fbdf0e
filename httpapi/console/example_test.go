package console_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing/fstest"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/httpapi/console"
	"github.com/deskkit/deskkit/trash"
)

// restorer is the host's trash.Restorer: a real one updates its tables.
type restorer struct{}

func (restorer) Restore(context.Context, bun.Tx, trash.Entry) error { return nil }
func (restorer) Purge(context.Context, bun.Tx, trash.Entry) error   { return nil }

// users is the host's directory as the console asks it on every request
// (console.PrincipalResolver): who a user is now, admin flag included.
type users map[int64]deskkit.Principal

func (u users) Principal(_ context.Context, tenantID, userID int64) (deskkit.Principal, error) {
	p, ok := u[userID]
	if !ok || p.TenantID != tenantID {
		return deskkit.Principal{}, deskkit.ErrNotFound // gone: the session ends
	}
	return p, nil
}

// A host mounts the console next to its own routes and opens it for its
// signed-in user with a portal link: here a "Trash" button of the host's
// page (/app/trash) mints a link for the user and the trash alone, and
// sends the browser there. The console asks the host on every request
// who the user is now and whether they may still use it.
func Example() {
	dir, err := os.MkdirTemp("", "console-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sqldb, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "host.db")+"?_txlock=immediate&_busy_timeout=10000&_journal_mode=WAL&_foreign_keys=1")
	if err != nil {
		log.Fatal(err)
	}
	sqldb.SetMaxOpenConns(8)
	db := bun.NewDB(sqldb, sqlitedialect.New())
	defer db.Close()
	ctx := context.Background()
	for _, migrate := range []func(context.Context, *bun.DB) error{trash.Migrate, console.Migrate} {
		if err := migrate(ctx, db); err != nil {
			log.Fatal(err)
		}
	}
	tr, err := trash.New(db, restorer{}, nil)
	if err != nil {
		log.Fatal(err)
	}

	// The host's own authentication decides who is signed in; this host
	// has one user, who stays signed in until signedOut is set.
	ada := deskkit.Principal{TenantID: 1, UserID: 7}
	signedOut := false
	con, err := console.New(&console.Config{
		DB:         db,
		Principals: users{7: ada},
		Secret:     []byte("a secret of 32 bytes or more....."), // from the host's secret store
		Trash:      tr,
		Allow: func(_ context.Context, p deskkit.Principal) error {
			if signedOut {
				return errors.New("signed out of the host")
			}
			return nil
		},
		BasePath:    "/manage/",
		NoDocs:      true,
		ProductName: "Acme",
		AccentColor: "#0b5cad",
	})
	if err != nil {
		log.Fatal(err)
	}

	// The host's routes, and the console's paths handed to it as they came.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /app/trash", func(w http.ResponseWriter, r *http.Request) {
		link, err := con.PortalLink(r.Context(), ada, console.ScopeTrash)
		if err != nil {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		http.Redirect(w, r, link, http.StatusSeeOther)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if con.Handles(r.URL.Path) {
			con.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	defer srv.Close()

	// The browser: the button leads to the link's page, whose form (posted
	// at once by the page's script) opens the session.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	res, err := browser.Get(srv.URL + "/app/trash")
	if err != nil {
		log.Fatal(err)
	}
	res.Body.Close()
	token := res.Request.URL.Query().Get("t")
	fmt.Println("link page:", res.Request.URL.Path, res.StatusCode)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/manage/portal", strings.NewReader(url.Values{"t": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err = browser.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	res.Body.Close()
	fmt.Println("opened:", res.Request.URL.Path, res.StatusCode)

	// The channels are not part of the link (nor served here), and the
	// host signing its user out ends the console's session.
	res, _ = browser.Get(srv.URL + "/manage/channels")
	res.Body.Close()
	fmt.Println("channels:", res.StatusCode)
	signedOut = true
	res, _ = browser.Get(srv.URL + "/manage/trash")
	res.Body.Close()
	fmt.Println("after sign-out:", res.Request.URL.Path, res.StatusCode)
	// Output:
	// link page: /manage/portal 200
	// opened: /manage/trash 200
	// channels: 404
	// after sign-out: /manage/trash 401
}

// hostLocales is the host's directory answering the locales of a
// principal's user and tenant (console.LocaleResolver).
type hostLocales struct{}

func (hostLocales) Locales(context.Context, deskkit.Principal) (user, tenant string, err error) {
	return "", "zh-CN", nil // the user chose none; the tenant works in Chinese
}

// A host rewords the console's texts in Chinese and English with
// catalogues of its own (typically an embed.FS of messages/*.json), hands
// the Messages to the console as it does to the API, and tells the
// console its users' and tenants' locales, which choose the pages'
// language after the browser's Accept-Language.
func Example_languages() {
	m, err := deskkit.NewMessages(fstest.MapFS{
		"messages/zh-Hans.json": {Data: []byte(`{"Trash": "废纸篓"}`)},
		"messages/en.json":      {Data: []byte(`{"Trash": "Recycle bin"}`)},
	})
	if err != nil {
		log.Fatal(err)
	}
	cfg := console.Config{ /* DB, Trash, ... */ Messages: m, Locales: hostLocales{}, DefaultLanguage: "en"}
	_ = cfg
	fmt.Println(m.Sprintf(m.Match("zh-CN"), "Trash"))
	fmt.Println(m.Sprintf(m.Match("en-GB"), "Trash"))
	// Output:
	// 废纸篓
	// Recycle bin
}
