package hostio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// recordingRunner records the commands it is asked to run.
type recordingRunner struct{ ran []string }

func (f *recordingRunner) Run(_ context.Context, c Cmd) (Result, error) {
	f.ran = append(f.ran, c.String())
	return Result{Stdout: []byte("exec " + c.String())}, nil
}

// TestDMRunnerFallsBackToExec: without a usable control node every dmsetup
// read runs the real command, and the fallback is counted with its reason.
func TestDMRunnerFallsBackToExec(t *testing.T) {
	exec := &recordingRunner{}
	r := &DMRunner{Exec: exec, Control: filepath.Join(t.TempDir(), "no-control")}
	cmds := []Cmd{dmTableCmd, dmStatusCmd, {Name: "dmsetup", Args: []string{"message", "vg-pool-vpool", "0", "stats"}}}
	// The status read runs with --noflush, as the ioctl sets
	// DM_NOFLUSH_FLAG: a fallback never commits a thin pool's metadata.
	want := []string{"dmsetup table", "dmsetup status --noflush", "dmsetup message vg-pool-vpool 0 stats"}
	for i, c := range cmds {
		res, err := r.Run(context.Background(), c)
		if err != nil || string(res.Stdout) != "exec "+want[i] {
			t.Errorf("%s: %q, %v", c, res.Stdout, err)
		}
	}
	st := r.Stats()
	if st.Exec != len(cmds) || st.Ioctl != 0 || st.LastFallback == "" {
		t.Errorf("stats = %+v", st)
	}
	if !slices.Equal(exec.ran, want) {
		t.Errorf("exec ran %q, want %q", exec.ran, want)
	}
}

// TestDMRunnerIoctlOff: with NoIoctl (KEEL_DM_IOCTL=off) a usable control
// node is not even tried; the reads run as in the fallback, status with
// --noflush.
func TestDMRunnerIoctlOff(t *testing.T) {
	exec := &recordingRunner{}
	r := &DMRunner{Exec: exec, NoIoctl: true, Control: os.DevNull}
	for _, c := range []Cmd{dmTableCmd, dmStatusCmd} {
		if _, err := r.Run(context.Background(), c); err != nil {
			t.Error(err)
		}
	}
	if want := []string{"dmsetup table", "dmsetup status --noflush"}; !slices.Equal(exec.ran, want) {
		t.Errorf("exec ran %q, want %q", exec.ran, want)
	}
	if st := r.Stats(); st.Exec != 2 || st.Ioctl != 0 || !strings.Contains(st.LastFallback, "KEEL_DM_IOCTL=off") {
		t.Errorf("stats = %+v", st)
	}
}

// TestDMRunnerPassesOtherCommands: only the three read forms are served;
// every other command, dmsetup or not, goes to Exec untouched.
func TestDMRunnerPassesOtherCommands(t *testing.T) {
	exec := &recordingRunner{}
	r := &DMRunner{Exec: exec, Control: filepath.Join(t.TempDir(), "no-control")}
	others := []Cmd{fullReportCmd, lvmConfigCmd, {Name: "dmsetup", Args: []string{"table", "vg-lv"}},
		{Name: "dmsetup", Args: []string{"message", "vg-tpool", "0", "reserve_metadata_snap"}},
		{Name: "dmsetup", Args: []string{"message", "vg-pool-vpool", "8", "stats"}}}
	for _, c := range others {
		if _, _, ok := dmServed(c); ok {
			t.Errorf("%s: would be served in-process", c)
		}
		if _, err := r.Run(context.Background(), c); err != nil {
			t.Error(err)
		}
	}
	if st := r.Stats(); st.Ioctl+st.Exec != 0 {
		t.Errorf("stats = %+v, want no dmsetup reads counted", st)
	}
	if fmt.Sprint(exec.ran) != fmt.Sprint(cmdStrings(others)) {
		t.Errorf("exec ran %q", exec.ran)
	}
}

func cmdStrings(cs []Cmd) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return out
}

// TestDMRunnerCancelled: a cancelled context is an error, not a fallback.
func TestDMRunnerCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	exec := &recordingRunner{}
	r := &DMRunner{Exec: exec}
	if _, err := r.Run(ctx, dmTableCmd); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	if len(exec.ran) != 0 {
		t.Errorf("exec ran %q", exec.ran)
	}
}
