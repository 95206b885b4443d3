package uevent

import (
	"os"
	"testing"
)

// BenchmarkParse decodes the captured change uevent of a bcache
// registration (the one that carries CACHED_UUID).
func BenchmarkParse(b *testing.B) {
	msg, err := os.ReadFile("testdata/uevent-004.bin")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		e, err := Parse(msg)
		if err != nil || !e.BcacheRegistered() {
			b.Fatal(err)
		}
	}
}
