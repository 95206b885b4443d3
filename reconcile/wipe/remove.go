package wipe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Executor runs one mutating LVM command given as an argv, never through a
// shell. It returns an error naming the command and its stderr when the
// command fails.
type Executor interface {
	Run(ctx context.Context, argv []string) error
}

// ExecExecutor runs commands on this host with LC_ALL=C.
type ExecExecutor struct {
	// Timeout bounds each command; zero means only the caller's context.
	Timeout time.Duration
}

// Run executes argv.
func (e ExecExecutor) Run(ctx context.Context, argv []string) error {
	if len(argv) == 0 {
		return errors.New("empty command")
	}
	if e.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LVM_SUPPRESS_FD_WARNINGS=1")
	cmd.WaitDelay = 2 * time.Second
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, msg)
	}
	return nil
}

// DeviceCloser is a Device that must be closed.
type DeviceCloser interface {
	Device
	Close() error
}

// Remover carries out planned removals: tag and rename to del-<name>,
// activate if needed, clear the blocks in steps, and lvremove.
type Remover struct {
	Exec Executor
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
	Started func(t Target, pass Mode, p *Progress)
	// Finished, when set, is called after each wipe pass.
	Finished func(t Target, pass Mode, p *Progress, err error)
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
	return DMPath(vg, lv)
}

// Check opens each active, not yet renamed target exclusively and closes it
// again, so that an LV held by someone LVM does not know about (a mount, a
// device-mapper table, an O_EXCL opener) is refused before anything changes.
func (r *Remover) Check(targets []Target) error {
	var errs []error
	for _, t := range targets {
		if t.Resume || !t.Active {
			continue
		}
		d, err := r.open(r.path(t.VG, t.LV))
		if err != nil {
			errs = append(errs, fmt.Errorf("lv %s: %w: %w", t.Name(), ErrRefused, err))
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
func (r *Remover) Remove(ctx context.Context, targets []Target) error {
	for _, t := range targets {
		if err := r.removeOne(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

func (r *Remover) removeOne(ctx context.Context, t Target) error {
	log := r.log().With("lv", t.Name())
	if !ValidName(t.VG) || !ValidName(t.LV) || !ValidName(DelPrefix+t.LV) {
		return fmt.Errorf("lv %s: %w: not a valid VG/LV name", t.Name(), ErrRefused)
	}
	for _, n := range t.Notes {
		log.Warn(n)
	}
	run := func(argv ...string) error {
		log.Info("run", "argv", strings.Join(argv, " "))
		if err := r.Exec.Run(ctx, argv); err != nil {
			return fmt.Errorf("lv %s: %w", t.Name(), err)
		}
		return nil
	}
	if t.Resume {
		log.Info("resuming interrupted wipe", "del_lv", t.DelName())
	} else {
		if err := run("lvchange", "--addtag", Tag, t.Name()); err != nil {
			return err
		}
		if err := run("lvrename", t.VG, t.LV, DelPrefix+t.LV); err != nil {
			return err
		}
	}
	if !t.Active {
		if err := run("lvchange", "--activate", "y", "--ignoreactivationskip", t.DelName()); err != nil {
			return err
		}
	}
	path := r.path(t.VG, DelPrefix+t.LV)
	passes := []Mode{t.Mode}
	if t.DiscardAfter {
		passes = append(passes, ModeDiscard)
	}
	for i, pass := range passes {
		if pass == ModeDiscard {
			ql, err := r.limits(path)
			if err != nil {
				return fmt.Errorf("lv %s (now %s, resumed on the next run): %w", t.Name(), t.DelName(), err)
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
				pass = ModeZeroOut
			}
		}
		if err := r.wipe(ctx, log, t, path, pass); err != nil {
			if i == 0 && !t.Resume && errors.Is(err, ErrInUse) {
				return r.giveBack(t, run, err)
			}
			return fmt.Errorf("lv %s (now %s, resumed on the next run): %w", t.Name(), t.DelName(), err)
		}
	}
	if err := run("lvremove", "--yes", t.DelName()); err != nil {
		return err
	}
	log.Info("removed")
	return nil
}

func (r *Remover) wipe(ctx context.Context, log hclog.Logger, t Target, path string, mode Mode) error {
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
	log.Info("wipe start", "mode", mode, "device", path, "step_bytes", step)
	err = Wipe(ctx, t.DelName(), r.guard(ctx, d, t.VG, DelPrefix+t.LV), mode, step, p)
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
