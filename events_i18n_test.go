package deskkit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/deskkit/deskkit"
	"github.com/deskkit/deskkit/channel"
	"github.com/deskkit/deskkit/internal/dbtest"
	"github.com/deskkit/deskkit/trash"
)

// A task trashed in two tenants reaches each tenant's DingTalk robot in the
// tenant's language: written from the event's heading and body when
// delivered, in Chinese for one, in English for the other.
func TestTrashEventOnDingTalkInTwoLanguages(t *testing.T) {
	dbtest.EachDB(t, func(t *testing.T, db *bun.DB) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		got := make(chan [2]string, 4)
		robot := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			var body struct {
				Markdown struct{ Title, Text string } `json:"markdown"`
			}
			_ = json.Unmarshal(b, &body)
			got <- [2]string{r.URL.Query().Get("access_token"), body.Markdown.Text}
			_, _ = w.Write([]byte(`{"errcode":0,"errmsg":"ok"}`))
		}))
		defer robot.Close()

		for _, migrate := range []func(context.Context, *bun.DB) error{trash.Migrate, channel.Migrate} {
			if err := migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
		}
		reg, err := channel.New(db, bytes.Repeat([]byte("s"), channel.MinSecretLength), nil, &channel.Config{
			AllowPrivateNetworks: true,
			Logger:               slog.New(slog.DiscardHandler),
			TenantLanguage: func(_ context.Context, tenantID int64) (string, error) {
				if tenantID == 1 {
					return "zh-CN", nil
				}
				return "en", nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.RegisterEventTypes(trash.EventTypes()...); err != nil {
			t.Fatal(err)
		}
		tr, err := trash.New(db, hostTasks{}, &trash.Config{Publisher: reg})
		if err != nil {
			t.Fatal(err)
		}
		for tenant, token := range map[int64]string{1: "zh", 2: "en"} {
			admin := deskkit.Principal{UserID: 7, TenantID: tenant, Admin: true}
			if _, err := reg.Add(ctx, admin, channel.Input{Type: "DINGTALK", Name: "robot", Address: robot.URL + "/robot/send?access_token=" + token}); err != nil {
				t.Fatal(err)
			}
			err := deskkit.RunInTx(ctx, db, nil, func(ctx context.Context, tx bun.Tx) error {
				_, err := tr.Add(ctx, tx, admin, trash.NewEntry{ProjectID: 3, TargetType: trash.TargetTask, TargetID: 42, TargetName: "Write the notes", CreatedBy: 7})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan error, 1)
		go func() { done <- reg.Run(ctx) }()
		want := map[string]string{
			"zh": "#### [robot] 任务 \"Write the notes\" 已移入回收站\n\n用户 7 将项目 3 的任务 \"Write the notes\" 移入了回收站。",
			"en": "#### [robot] Task \"Write the notes\" moved to the trash\n\nUser 7 moved task \"Write the notes\" of project 3 to the trash.",
		}
		for range 2 {
			select {
			case g := <-got:
				if g[1] != want[g[0]] {
					t.Errorf("%s robot got %q, want %q", g[0], g[1], want[g[0]])
				}
				delete(want, g[0])
			case <-time.After(30 * time.Second): // a bound on a hang, not a wait for time to pass
				t.Fatalf("the robots got nothing for %v", want)
			}
		}
		cancel()
		if err := <-done; err != nil && !strings.Contains(err.Error(), "context canceled") {
			t.Error(err)
		}
	})
}
