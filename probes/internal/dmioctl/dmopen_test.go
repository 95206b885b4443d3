package dmioctl

import (
	"errors"
	"strings"
	"testing"
)

// TestDMOpenCount checks the request DM_DEV_STATUS sends and where the open
// count is read from the reply: struct dm_ioctl's open_count after
// target_count (include/uapi/linux/dm-ioctl.h).
func TestDMOpenCount(t *testing.T) {
	for _, want := range []int{0, 1, 3} {
		var gotReq uint32
		var gotName string
		call := func(req uint32, version [3]uint32, name string, flags uint32, payload []byte) ([]byte, error) {
			gotReq, gotName = req, name
			b, err := dmRequest(HeaderSize, version, name, flags, payload)
			if err != nil {
				return nil, err
			}
			ne.PutUint32(b[offOpenCount:], uint32(want))
			ne.PutUint32(b[offTargetCount:], 7) // the neighbouring fields must not leak in
			ne.PutUint32(b[offFlags:], dmFlagExists)
			return b, nil
		}
		n, err := dmOpenCount(call, "tvg-del--held")
		if err != nil || n != want {
			t.Fatalf("open count %d, %v; want %d", n, err, want)
		}
		if gotReq != 0xc138fd07 || gotName != "tvg-del--held" {
			t.Fatalf("request %#x for %q", gotReq, gotName)
		}
	}
}

func TestDMOpenCountErrors(t *testing.T) {
	gone := func(uint32, [3]uint32, string, uint32, []byte) ([]byte, error) {
		return nil, errors.New("no such device or address")
	}
	if _, err := dmOpenCount(gone, "vg-lv"); err == nil || !strings.Contains(err.Error(), "dm device vg-lv") {
		t.Fatalf("got %v", err)
	}
	short := func(uint32, [3]uint32, string, uint32, []byte) ([]byte, error) { return make([]byte, 20), nil }
	if _, err := dmOpenCount(short, "vg-lv"); err == nil {
		t.Fatal("a short reply was accepted")
	}
}
