package hostio

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestBound(t *testing.T) {
	for _, tc := range []struct {
		argv string
		want time.Duration
	}{
		{"pvmove -n kvg/vsplit_vdata /dev/sdb:10-42 /dev/nvme0n1", Unbounded},
		{"pvmove /dev/sdb", Unbounded},
		{"/usr/sbin/pvmove /dev/sdb", Unbounded},
		{"lvm pvmove /dev/sdb", Unbounded},
		{"lvconvert -y --type vdo-pool -n vlv -V 2G kvg/pool", Unbounded},
		{"lvextend -L 8G kvg/vpool", Unbounded},
		{"lvresize -L 8G kvg/vpool", Unbounded},
		{"vgchange -ay kvg", Unbounded},
		{"vgchange -aay kvg", Unbounded},
		{"vgchange --activate ay kvg", Unbounded},
		{"lvchange -a y kvg/lv", Unbounded},
		{"lvchange --activate=ey kvg/lv", Unbounded},
		{"lvchange --refresh kvg/lv", Unbounded},
		{"lvchange -an kvg/lv", 0},
		{"vgchange --activate n kvg", 0},
		{"lvchange --addtag keel kvg/lv", 0},
		{"lvremove -y kvg/pvmove0", 0},
		{"lvcreate -L 1G -n lv kvg", 0},
		{"dmsetup resume kvg-lv", 0},
		{"lvm lvs", 0},
		{"", 0},
	} {
		if got := Bound(strings.Fields(tc.argv)); got != tc.want {
			t.Errorf("Bound(%q) = %v, want %v", tc.argv, got, tc.want)
		}
	}
}

// TestUnboundedOutlivesTimeoutAndCancel runs a command longer than the
// runner's timeout, with a context cancelled while it runs: unbounded, it
// runs to its end; bounded, the timeout kills it.
func TestUnboundedOutlivesTimeoutAndCancel(t *testing.T) {
	r := ExecRunner{Timeout: 100 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	res, err := r.Run(ctx, Cmd{Name: "sh", Args: []string{"-c", "sleep 0.4; echo done"}, Timeout: Unbounded})
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "done" || res.ExitCode != 0 {
		t.Fatalf("unbounded command: %v, exit %d, stdout %q; want it run to its end", err, res.ExitCode, res.Stdout)
	}
	if _, err := r.Run(context.Background(), Cmd{Name: "sh", Args: []string{"-c", "sleep 0.4"}}); err == nil {
		t.Fatal("bounded command past the runner's timeout: no error, want it killed")
	}
}
