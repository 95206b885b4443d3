package hostio

import (
	"errors"
	"testing"
)

func TestSuspendedErrorWraps(t *testing.T) {
	if !errors.Is(suspendedError("/dev/mapper/x"), ErrSuspended) {
		t.Error("suspendedError does not wrap ErrSuspended")
	}
}
