package wipe

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/plan/removal"
)

// Signature is what blkid's low-level probe reported for a device: the
// KEY=value pairs of `blkid -p -o export` (TYPE, USAGE, PTTYPE, UUID, ...).
type Signature map[string]string

// layer reports whether the signature says another storage layer lives on
// the device, as opposed to content the LV itself carries. libblkid tags
// every superblock type with a usage (libblkid/src/superblocks, the
// idinfo's usage): "filesystem" is a file system, which on a VM disk is
// the guest's data that removal is asked to destroy; "raid" (LVM2_member,
// linux_raid_member, ...), "crypto" (crypto_LUKS) and "other" (bcache,
// VDO, swap, ext journal devices) are layers of the host's stack that
// something above depends on. A *_member type (zfs_member) counts as a
// layer whatever its usage. A partition table alone (PTTYPE) is a VM disk's
// layout and is not a layer.
func (s Signature) layer() bool {
	t := s["TYPE"]
	if t == "" {
		return false
	}
	return s["USAGE"] != "filesystem" || strings.HasSuffix(t, "_member")
}

func (s Signature) String() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		if k != "DEVNAME" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + s[k]
	}
	return strings.Join(parts, " ")
}

// blkidCmd is the low-level probe of one device: -p reads the superblocks
// and partition table from the device itself (no cache), as wipefs does.
func blkidCmd(path string) hostio.Cmd {
	return hostio.Cmd{Name: "blkid", Args: []string{"-p", "-o", "export", path}}
}

// Exit statuses of blkid -p (util-linux misc-utils/blkid.c).
const (
	blkidNothing    = 2 // no signature found
	blkidAmbivalent = 8 // more than one signature: wipefs lists them
)

// ReadSignature probes path with blkid -p through run (a read, like the
// probes' own commands). It returns nil when the device carries no
// signature.
func ReadSignature(ctx context.Context, run hostio.Runner, path string) (Signature, error) {
	c := blkidCmd(path)
	res, err := run.Run(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c, err)
	}
	switch res.ExitCode {
	case 0:
	case blkidNothing:
		return nil, nil
	case blkidAmbivalent:
		return Signature{"TYPE": "ambivalent", "USAGE": "several signatures (blkid -p exit 8; wipefs " + path + " lists them)"}, nil
	default:
		return nil, res.Err(c)
	}
	sig := Signature{}
	sc := bufio.NewScanner(bytes.NewReader(res.Stdout))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok && k != "" {
			sig[k] = v
		}
	}
	return sig, nil
}

// CheckContent refuses every target whose content says that another layer
// of the storage stack lives on it (Signature.layer): an LVM PV label of a
// VG that LVM does not list (scan_lvs=0, or an inactive upper VG), an md
// member, bcache, VDO, LUKS. It reads each device with blkid -p through run
// before anything changes. An inactive target is activated for the read
// (lvchange through r.Exec) and deactivated again when refused; targets
// keel is resuming are skipped (their clearing has begun). A device keel
// cannot read is refused too: when in doubt, nothing is wiped.
func (r *Remover) CheckContent(ctx context.Context, run hostio.Runner, targets []removal.Target) error {
	var errs []error
	for _, t := range targets {
		if t.Resume {
			continue
		}
		if err := r.checkContent(ctx, run, t); err != nil {
			errs = append(errs, fmt.Errorf("lv %s: %w", t.Name(), err))
		}
	}
	return errors.Join(errs...)
}

func (r *Remover) checkContent(ctx context.Context, run hostio.Runner, t removal.Target) error {
	if !t.Active {
		if err := r.command(ctx, "lvchange", "--activate", "y", "--ignoreactivationskip", t.Name()); err != nil {
			return fmt.Errorf("%w: cannot activate it to read its content: %w", removal.ErrRefused, err)
		}
	}
	sig, err := ReadSignature(ctx, run, r.path(t.VG, t.LV))
	refusal := err
	switch {
	case err != nil:
		refusal = fmt.Errorf("%w: cannot read its content, so cannot tell whether something lives on it: %w", removal.ErrRefused, err)
	case sig.layer():
		remedy := "wipefs --all " + r.path(t.VG, t.LV)
		if !t.Active {
			remedy = "lvchange --activate y " + t.Name() + " && " + remedy
		}
		refusal = fmt.Errorf("%w: its content is a %s signature (%s): another storage layer may live on it; if nothing uses it, clear it with: %s",
			removal.ErrRefused, sig["TYPE"], sig, remedy)
	case sig != nil:
		r.log().Info("content", "lv", t.Name(), "signature", sig.String())
	}
	if refusal != nil && !t.Active {
		if derr := r.command(ctx, "lvchange", "--activate", "n", t.Name()); derr != nil {
			r.log().Error("deactivating again after the content check failed", "lv", t.Name(), "err", derr)
		}
	}
	return refusal
}
