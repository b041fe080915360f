package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/mnemo-agent/mnemo/cmd/internal/config"
	"github.com/mnemo-agent/mnemo/memory"
)

// ownerGuard stops a memory command that writes, run as another user than
// the one who owns the data folder (root, most often, on a service's
// tree): what it writes — a memory file, its history, the reflection
// journal — would be that user's, and the service could no longer read or
// change it (it would then say "Available memory: none yet"). Commands
// that only read are let through, and so is `check --fix`, the repair (as
// root it gives files back); a forget a running mnemo does for us (over
// its control socket) writes nothing here and is asked before this.
// --as-any-user lets any command through.
func ownerGuard(env *cliEnv, cfg *config.Config, sub string, o memoryOptions) error {
	writes := sub == "forget" || sub == "edit" || sub == "restore" || sub == "pending" && (o.retry || o.drop)
	if o.anyUser || !writes {
		return nil
	}
	fi, err := os.Stat(cfg.Memory.DataDir)
	if err != nil {
		return nil // openAdminStore says what is wrong with it
	}
	owner, ok := env.ownerOf(fi)
	me := env.currentUID()
	if !ok || owner == me {
		return nil
	}
	name := memory.UserName(owner)
	return failure(fmt.Errorf("the data folder %s belongs to %s, and this runs as %s: what memory %s writes would be %s's, and mnemo running as %s could not change it. "+
		"Run it as the owner: sudo -u %s %s memory %s …; or add --as-any-user if you mean it (then sudo mnemo memory check --fix gives the files back)",
		cfg.Memory.DataDir, name, memory.UserName(me), sub, memory.UserName(me), name, sudoUser(owner), invokedAs(env.self), sub))
}

// sudoUser is how `sudo -u` names uid: its login name, else '#UID' (a
// systemd DynamicUser has no name while its service is stopped).
func sudoUser(uid int) string {
	if name := memory.UserName(uid); !strings.HasPrefix(name, "uid ") {
		return name
	}
	return "'#" + strconv.Itoa(uid) + "'"
}

// currentUID is who runs this command.
func (env *cliEnv) currentUID() int {
	if env.uid != nil {
		return env.uid()
	}
	return os.Getuid()
}

// ownerOf is who owns a file, ok false where the system does not tell.
func (env *cliEnv) ownerOf(fi os.FileInfo) (int, bool) {
	owner := env.owner
	if owner == nil {
		owner = memory.StatOwner
	}
	uid, _, ok := owner(fi)
	return uid, ok
}

// checkFix is `memory check --fix`: loose modes are made 0700 (folders)
// and 0600 (files), and, when run as root, entries someone else owns go
// back to the data folder's owner; then the check runs again and reports
// what is left (exit 1 when anything is).
func (m *memoryCmd) checkFix(name string) error {
	rep, err := m.store.Check(name)
	if errors.Is(err, memory.ErrNotFound) {
		return m.noUser(name)
	}
	if err != nil {
		return err
	}
	for _, f := range m.store.Fix(rep, m.env.currentUID() == 0) {
		if f.Err != nil {
			fmt.Fprintf(m.env.stderr, "mnemo: could not fix %s (%s): %v\n", f.Problem.Name(), f.Problem.Kind, f.Err)
			continue
		}
		fmt.Fprintf(m.env.stdout, "fixed %s: %s\n", f.Problem.Name(), fixedWhat(f.Problem.Kind))
	}
	return m.check(name)
}

func fixedWhat(k memory.ProblemKind) string {
	if k == memory.ProblemForeignOwner {
		return "given back to the data folder's owner"
	}
	return "mode 0700 (folder) or 0600 (file)"
}
