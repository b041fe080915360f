package userdata

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/mnemo-agent/mnemo/agent/defaults"
	"github.com/mnemo-agent/mnemo/memory"
	memhistory "github.com/mnemo-agent/mnemo/memory/history"
)

// Service shows, exports, lists the history of and forgets what is kept
// of a person or a channel. Build it with New.
type Service struct {
	store   *memory.Store
	hist    *memhistory.Store
	holders []Holder
	log     *slog.Logger
}

// New is the service over w's data, its holders the registry's
// (Holders). A nil log discards.
func New(w Wiring, log *slog.Logger) *Service {
	return &Service{store: w.Store, hist: w.History, holders: Holders(w), log: defaults.Logger(log)}
}

// Holders are the service's holders, in the order a forget runs them.
func (s *Service) Holders() []Holder { return s.holders }

// Forget deletes what is kept of r.Owner: every holder runs, in order,
// and the first error stops it — except a missing memory file or folder,
// an error wrapping memory.ErrNotFound returned once the rest is gone (a
// person with no memory files may still have queued messages, journaled
// turns or a chat history). The report says what was dropped besides the
// files. r.Owner is checked first, before anything is dropped.
func (s *Service) Forget(ctx context.Context, r Request) (Report, error) {
	if _, err := s.store.User(r.Owner); err != nil {
		return nil, err
	}
	if r.Path != "" {
		if _, err := memory.ParsePath(r.Path); err != nil {
			return nil, err
		}
	}
	var rep Report
	var missing error
	for _, h := range s.holders {
		d, err := h.Forget(ctx, r)
		if d.Noun != "" {
			rep = append(rep, d)
		}
		switch {
		case errors.Is(err, memory.ErrNotFound) && missing == nil:
			missing = err
		case err != nil:
			return rep, err
		}
	}
	if missing != nil {
		return rep, missing
	}
	s.log.Info("memory: forgotten at the user's request", "user", r.Owner, "path", r.Path, "dropped", rep.String(), "history_kept", r.KeepHistory)
	return rep, nil
}

// Export writes owner's memory files to w as a tar.gz archive
// (memory.User.Export); no folder is an error wrapping memory.ErrNotFound.
func (s *Service) Export(owner string, w io.Writer) (memory.ExportReport, error) {
	u, err := s.store.User(owner)
	if err != nil {
		return memory.ExportReport{}, err
	}
	return u.Export(w)
}

// Change is one version kept of a memory file and what changed in it
// since the version before it ("+3 −1 lines", "created, 4 lines",
// "deleted").
type Change struct {
	memhistory.Version
	Change string
}

// History is the versions kept of owner's file p (all of owner's files
// for ""), newest first, each with what changed.
func (s *Service) History(owner, p string) ([]Change, error) {
	if s.hist == nil {
		return nil, fmt.Errorf("the history of %s is not open here", owner)
	}
	versions, err := s.hist.List(owner, p)
	if err != nil {
		return nil, err
	}
	out := make([]Change, len(versions))
	for i, v := range versions {
		out[i] = Change{v, "deleted"}
		if !v.Deleted {
			out[i].Change = s.change(owner, v, versions[i+1:])
		}
	}
	return out, nil
}

// change summarizes version v against the next older version of the same
// file among older.
func (s *Service) change(owner string, v memhistory.Version, older []memhistory.Version) string {
	text, err := s.hist.Read(owner, v.Path, v)
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	for _, o := range older {
		if o.Path != v.Path {
			continue
		}
		if o.Deleted {
			return memhistory.Summary(nil, text, false)
		}
		prev, err := s.hist.Read(owner, o.Path, o)
		if err != nil {
			return "(earlier version unreadable)"
		}
		return memhistory.Summary(prev, text, true)
	}
	return memhistory.Summary(nil, text, false)
}
