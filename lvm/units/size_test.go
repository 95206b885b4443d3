package units

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestLVMArg(t *testing.T) {
	for n, want := range map[uint64]string{2 << 30: "2G", 64 << 10: "64K", 1536 << 20: "1536M", 36507222016 + 512: "36507222528b",
		1 << 40: "1T", 512: "512b", 2097664: "2097664b", 0: "0b"} {
		if got := LVMArg(n); got != want {
			t.Errorf("LVMArg(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCheckLVMSize(t *testing.T) {
	for n, ok := range map[uint64]bool{0: false, 100: false, 511: false, 512: true, 2097153: false, 2 << 30: true} {
		if err := CheckLVMSize(n); (err == nil) != ok || (err != nil && !errors.Is(err, ErrSize)) {
			t.Errorf("CheckLVMSize(%d) = %v, want ok %v", n, err, ok)
		}
	}
}

// TestSizeText: a Size decodes once, keeps what it could not parse for the
// checks, and survives a JSON round trip (the desired-state cache).
func TestSizeText(t *testing.T) {
	var s struct {
		A, B, C Size
	}
	if err := json.Unmarshal([]byte(`{"A":"2147483648","B":"","C":"12Q"}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.A.Bytes != 2<<30 || s.A.Err() != nil || s.A.LVMArg() != "2G" || s.A.String() != "2147483648" {
		t.Errorf("A = %+v", s.A)
	}
	if s.B.IsSet() || s.B.Err() != nil {
		t.Errorf("empty text: %+v", s.B)
	}
	if !errors.Is(s.C.Err(), ErrSize) {
		t.Errorf("12Q: %+v", s.C)
	}
	b, err := json.Marshal(s)
	if err != nil || string(b) != `{"A":"2147483648","B":"","C":"12Q"}` {
		t.Errorf("marshal: %s, %v", b, err)
	}
}
