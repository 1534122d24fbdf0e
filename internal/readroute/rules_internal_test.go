package readroute

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deskkit/deskkit/internal/clocktest"
)

// TestLag: the lag is the age of the oldest primary position the standby
// has not replayed; 0 when it has replayed them all, whatever time has
// passed (an idle primary).
func TestLag(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		unseen []sample
		replay uint64
		now    time.Time
		want   time.Duration
	}{
		{"nothing unseen", nil, 100, t0.Add(time.Hour), 0},
		{"replayed since", []sample{{lsn: 100, seen: t0}}, 100, t0.Add(time.Hour), 0},
		{"one behind", []sample{{lsn: 200, seen: t0}}, 100, t0.Add(1500 * time.Millisecond), 1500 * time.Millisecond},
		{"oldest counts", []sample{{lsn: 200, seen: t0}, {lsn: 300, seen: t0.Add(time.Second)}}, 100, t0.Add(2 * time.Second), 2 * time.Second},
	} {
		r := &Router{unseen: tc.unseen, replay: tc.replay}
		if got := r.lagLocked(tc.now); got != tc.want {
			t.Errorf("%s: lag %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestMarksBounded: past MaxTenants, replayed and expired marks go first,
// then the known positions fold into the floor that every tenant's reads
// wait for; a mark never gets lost, only merged.
func TestMarksBounded(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	type state struct {
		Marks map[int64]uint64
		Floor uint64
	}
	for _, tc := range []struct {
		name   string
		marks  map[int64]mark
		replay uint64
		put    mark
		want   state
	}{
		{"room", map[int64]mark{1: {lsn: 10}}, 0, mark{lsn: 30}, state{map[int64]uint64{1: 10, 9: 30}, 0}},
		{"replayed go", map[int64]mark{1: {lsn: 10}, 2: {lsn: 20}}, 15, mark{lsn: 30}, state{map[int64]uint64{2: 20, 9: 30}, 0}},
		{"fold into the floor", map[int64]mark{1: {lsn: 10}, 2: {lsn: 20}}, 5, mark{lsn: 30}, state{map[int64]uint64{9: 30}, 20}},
		{"expired windows go", map[int64]mark{1: {pending: clock.Now()}, 2: {lsn: 20}}, 5, mark{lsn: 30}, state{map[int64]uint64{2: 20, 9: 30}, 0}},
	} {
		r := &Router{marks: tc.marks, replay: tc.replay, cfg: Config{Now: clock.Now, MaxTenants: 2, PendingWindow: time.Second}}
		r.putLocked(9, tc.put)
		got := state{Marks: map[int64]uint64{}, Floor: r.floor}
		for k, m := range r.marks {
			got.Marks[k] = m.lsn
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}
