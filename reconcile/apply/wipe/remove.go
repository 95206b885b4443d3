package wipe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/shell"
	"github.com/keel-storage/keel/reconcile/plan/removal"
)

// DeviceCloser is a Device that must be closed.
type DeviceCloser interface {
	Device
	Close() error
}

// Remover carries out planned removals: tag and rename to del-<name>,
// activate if needed, clear the blocks in steps, and lvremove.
type Remover struct {
	// Exec runs the LVM commands (lvchange, lvrename, lvremove); keel hands
	// it the executor's allowlisted runner.
	Exec hostio.Runner
	// Open opens a device exclusively; nil means OpenBlock.
	Open func(path string) (DeviceCloser, error)
	// Limits reads a device's queue limits; nil means ReadQueueLimits("/sys", path).
	Limits func(path string) (QueueLimits, error)
	// Path gives the device node of vg/lv; nil means DMPath.
	Path func(vg, lv string) string
	// OpenCount reads a dm device's open count; nil means probes.DMOpenCount.
	OpenCount func(dmName string) (int, error)
	// OpenGrace is how long another opener may last; 0 means DefaultOpenGrace.
	OpenGrace time.Duration
	// Step is the wanted step in bytes; 0 means DefaultStep.
	Step uint64
	Log  hclog.Logger
	// Started, when set, is called with each wipe's Progress before its first
	// step, so the caller can draw a bar or publish a metric.
	Started func(t removal.Target, pass removal.Mode, p *Progress)
	// Finished, when set, is called after each wipe pass.
	Finished func(t removal.Target, pass removal.Mode, p *Progress, err error)
	// Journal, when set, keeps a checkpoint of each wipe every
	// CheckpointEvery (5s), after flushing the device, so that a wipe
	// killed midway resumes from it (targets with an LV UUID only).
	Journal         Journal
	CheckpointEvery time.Duration
}

// syncer is a device whose volatile cache can be flushed.
type syncer interface{ Sync() error }

// command runs one LVM command through Exec; a failure or a non-zero exit
// is an error naming it.
func (r *Remover) command(ctx context.Context, argv ...string) error {
	c := hostio.Cmd{Name: argv[0], Args: argv[1:]}
	res, err := r.Exec.Run(ctx, c)
	if err != nil {
		return err
	}
	return res.Err(c)
}

func (r *Remover) log() hclog.Logger {
	if r.Log == nil {
		return hclog.NewNullLogger()
	}
	return r.Log
}

func (r *Remover) open(path string) (DeviceCloser, error) {
	if r.Open != nil {
		return r.Open(path)
	}
	d, err := OpenBlock(path)
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (r *Remover) limits(path string) (QueueLimits, error) {
	if r.Limits != nil {
		return r.Limits(path)
	}
	return ReadQueueLimits("/sys", path)
}

func (r *Remover) path(vg, lv string) string {
	if r.Path != nil {
		return r.Path(vg, lv)
	}
	return lvm.Name{VG: vg, LV: lv}.DMPath()
}

// Check opens each active, not yet renamed target exclusively and closes it
// again, so that an LV held by someone LVM does not know about (a mount, a
// device-mapper table, an O_EXCL opener) is refused before anything changes.
func (r *Remover) Check(targets []removal.Target) error {
	var errs []error
	for _, t := range targets {
		if t.Resume || !t.Active {
			continue
		}
		d, err := r.open(r.path(t.VG, t.LV))
		if err != nil {
			errs = append(errs, fmt.Errorf("lv %s: %w: %w", t.Name(), removal.ErrRefused, err))
			continue
		}
		err = r.unused(context.Background(), t.VG, t.LV, 1)
		d.Close()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Remove carries out each target in order and stops at the first failure.
// A target that fails after its rename stays as del-<name> and is resumed
// by the next run.
func (r *Remover) Remove(ctx context.Context, targets []removal.Target) error {
	for _, t := range targets {
		if err := r.removeOne(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

func (r *Remover) removeOne(ctx context.Context, t removal.Target) error {
	log := r.log().With("lv", t.Name())
	if !lvm.ValidName(t.VG) || !lvm.ValidName(t.LV) || !lvm.ValidName(removal.DelPrefix+t.LV) {
		return fmt.Errorf("lv %s: %w: not a valid VG/LV name", t.Name(), removal.ErrRefused)
	}
	for _, n := range t.Notes {
		log.Warn(n)
	}
	run := func(argv ...string) error {
		log.Info("run", "argv", shell.Join(argv))
		if err := r.command(ctx, argv...); err != nil {
			return fmt.Errorf("lv %s: %w", t.Name(), err)
		}
		return nil
	}
	if t.Resume {
		log.Info("resuming interrupted wipe", "del_lv", t.DelName())
	} else {
		if err := run("lvchange", "--addtag", removal.Tag, t.Name()); err != nil {
			return err
		}
		if err := run("lvrename", t.VG, t.LV, removal.DelPrefix+t.LV); err != nil {
			return err
		}
	}
	if !t.Active {
		if err := run("lvchange", "--activate", "y", "--ignoreactivationskip", t.DelName()); err != nil {
			return err
		}
	}
	path := r.path(t.VG, removal.DelPrefix+t.LV)
	passes := []removal.Mode{t.Mode}
	if t.DiscardAfter {
		passes = append(passes, removal.ModeDiscard)
	}
	cp, resumeAt := r.checkpoint(log, t, passes)
	for i, pass := range passes {
		if i < resumeAt {
			log.Info("wipe pass already done before the interruption", "mode", pass)
			continue
		}
		start := uint64(0)
		if i == resumeAt && cp != nil {
			start = cp.Offset
		}
		if pass == removal.ModeDiscard {
			ql, err := r.limits(path)
			if err != nil {
				return fmt.Errorf("lv %s (now %s; keel wipe %s resumes it): %w", t.Name(), t.DelName(), t.Name(), err)
			}
			if ql.DiscardMax == 0 {
				if t.NoZeroFill {
					log.Warn("thin LV does not discard: not zero-filling it; lvremove frees its chunks", "device", path)
					continue
				}
				if i > 0 {
					log.Warn("device does not discard: the blocks stay allocated below", "device", path)
					continue
				}
				log.Warn("device does not discard: zeroing instead", "device", path)
				pass = removal.ModeZeroOut
			}
		}
		if err := r.wipe(ctx, log, t, path, pass, start); err != nil {
			if i == 0 && !t.Resume && errors.Is(err, ErrInUse) {
				return r.giveBack(t, run, err)
			}
			return fmt.Errorf("lv %s (now %s; keel wipe %s resumes it): %w", t.Name(), t.DelName(), t.Name(), err)
		}
	}
	if err := run("lvremove", "--yes", t.DelName()); err != nil {
		return err
	}
	if r.Journal != nil && t.UUID != "" {
		if err := r.Journal.Delete(t.UUID); err != nil {
			log.Warn("wipe checkpoint not deleted", "err", err)
		}
	}
	log.Info("removed")
	return nil
}

// checkpoint returns the checkpoint of a resumed target and the index of
// the pass it belongs to (passes before it are complete); nil and 0 when
// there is none to trust.
func (r *Remover) checkpoint(log hclog.Logger, t removal.Target, passes []removal.Mode) (*Checkpoint, int) {
	if r.Journal == nil || t.UUID == "" || !t.Resume {
		return nil, 0
	}
	cp, ok, err := r.Journal.Load(t.UUID)
	if err != nil {
		log.Warn("wipe checkpoint unreadable: starting at byte 0", "err", err)
		return nil, 0
	}
	if !ok {
		return nil, 0
	}
	for i, m := range passes {
		if m == cp.Mode && cp.Size == t.Size && cp.Offset <= cp.Size {
			log.Info("resuming wipe from its checkpoint", "mode", cp.Mode, "offset", cp.Offset, "size", cp.Size)
			return &cp, i
		}
	}
	log.Warn("wipe checkpoint does not match the LV: starting at byte 0", "mode", cp.Mode, "size", cp.Size, "lv_size", t.Size)
	return nil, 0
}

// keepCheckpoints saves a checkpoint of p every CheckpointEvery until stop
// is closed, and once more then: the device is flushed first, so that a
// checkpoint never claims bytes that a power loss could bring back.
func (r *Remover) keepCheckpoints(log hclog.Logger, t removal.Target, mode removal.Mode, d Device, p *Progress, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	every := r.CheckpointEvery
	if every <= 0 {
		every = 5 * time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	save := func() {
		off := p.Stat().Done
		if s, ok := d.(syncer); ok {
			if err := s.Sync(); err != nil {
				log.Warn("wipe checkpoint: flush failed, not saved", "err", err)
				return
			}
		}
		// off is a whole number of sectors with no rounding: WipeFrom
		// starts at a sector boundary (it refuses any other) and adds
		// steps that are multiples of the sector size up to a size it
		// rounds down to one, so Progress never counts part of a sector.
		if err := r.Journal.Save(Checkpoint{LVUUID: t.UUID, Name: t.DelName(), Mode: mode, Size: t.Size, Offset: off}); err != nil {
			log.Warn("wipe checkpoint not saved", "err", err)
		}
	}
	for {
		select {
		case <-stop:
			save()
			return
		case <-tick.C:
			save()
		}
	}
}

func (r *Remover) wipe(ctx context.Context, log hclog.Logger, t removal.Target, path string, mode removal.Mode, start uint64) error {
	ql, err := r.limits(path)
	if err != nil {
		return err
	}
	step, notes, err := StepFor(mode, r.Step, ql)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, n := range notes {
		log.Warn(n)
	}
	d, err := r.open(path)
	if err != nil {
		return err
	}
	defer d.Close()
	p := &Progress{}
	if r.Started != nil {
		r.Started(t, mode, p)
	}
	log.Info("wipe start", "mode", mode, "device", path, "step_bytes", step, "offset", start)
	if r.Journal != nil && t.UUID != "" {
		stop, saved := make(chan struct{}), make(chan struct{})
		go r.keepCheckpoints(log, t, mode, d, p, stop, saved)
		defer func() { close(stop); <-saved }()
	}
	err = WipeFrom(ctx, t.DelName(), r.guard(ctx, d, t.VG, removal.DelPrefix+t.LV), mode, step, start, p)
	if r.Finished != nil {
		r.Finished(t, mode, p, err)
	}
	if err != nil {
		return err
	}
	s := p.Stat()
	log.Info("wipe done", "mode", mode, "bytes", s.Done, "seconds", s.Elapsed.Seconds(), "rate_bytes_per_s", uint64(s.Rate))
	return nil
}
