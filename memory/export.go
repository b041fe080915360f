package memory

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// ExportReport says what Export put in the archive and what it left out.
type ExportReport struct {
	Files   int       // memory files written
	Bytes   int64     // their total size
	Skipped []Problem // memory names that are not plain files (symlinks, FIFOs, hard links, folders)
}

// Export writes the user's memory to w as a gzip-compressed tar archive:
// the folders USER/, USER/facts/ and USER/episodes/ (mode 0700) and every
// file whose name is in the path grammar (mode 0600, its own modification
// time), named USER/facts/<name>.md and USER/episodes/YYYY-MM.md. Files are
// opened through the user's os.Root like every other read, and only plain
// files with one link are exported: a symlink, FIFO or hard link is never
// followed, it is listed in the report instead. Files are streamed, so the
// size limit of memory_read does not apply. Names outside the grammar
// (editor backups, temp files) are not memory and are left out silently.
// A user with no folder is an error wrapping ErrNotFound.
func (u *User) Export(w io.Writer) (ExportReport, error) {
	var rep ExportReport
	root, ref, err := u.openRoot(false)
	if err != nil {
		return rep, err
	}
	if root == nil {
		return rep, fmt.Errorf("%s has no memory folder: %w", u.name, ErrNotFound)
	}
	defer ref.release()
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	err = u.exportTo(tw, root, &rep)
	// Close both even after an error, so a broken pipe is reported once.
	err = errors.Join(err, tw.Close(), gz.Close())
	return rep, err
}

func (u *User) exportTo(tw *tar.Writer, root *os.Root, rep *ExportReport) error {
	top, err := root.Stat(".")
	if err != nil {
		return err
	}
	if err := writeDir(tw, u.name+"/", top); err != nil {
		return err
	}
	for _, sub := range []string{factsDir, episodesDir} {
		fi, err := root.Lstat(sub)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && !fi.IsDir() {
			rep.Skipped = append(rep.Skipped, Problem{User: u.name, Path: sub, Kind: ProblemNotRegular,
				Detail: fmt.Sprintf("is a %s, not a folder; not exported", entryKind(fi.Mode()))})
			continue
		}
		if err != nil {
			return err
		}
		if err := writeDir(tw, u.name+"/"+sub+"/", fi); err != nil {
			return err
		}
		names := readDirNames(root, sub)
		slices.Sort(names)
		for _, name := range names {
			p := sub + "/" + name
			if _, err := ParsePath(p); err != nil {
				continue
			}
			if err := u.exportFile(tw, root, p, rep); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeDir(tw *tar.Writer, name string, fi fs.FileInfo) error {
	return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o700, ModTime: fi.ModTime()})
}

// exportFile streams one memory file into the archive, or records why not.
func (u *User) exportFile(tw *tar.Writer, root *os.Root, p string, rep *ExportReport) error {
	f, fi, err := openRegular(root, p)
	if errors.Is(err, ErrNotRegular) {
		rep.Skipped = append(rep.Skipped, Problem{User: u.name, Path: p, Kind: ProblemNotRegular,
			Detail: strings.TrimPrefix(err.Error(), p+": ") + "; not exported"})
		return nil
	}
	if err != nil {
		return fmt.Errorf("export %s: %w", p, err)
	}
	defer f.Close()
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: u.name + "/" + p, Mode: 0o600, Size: fi.Size(), ModTime: fi.ModTime()}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("export %s: %w", p, err)
	}
	n, err := io.Copy(tw, io.LimitReader(f, fi.Size()))
	if err == nil && n != fi.Size() {
		err = errors.New("it shrank while being exported (edited in place?); try again")
	}
	if err != nil {
		return fmt.Errorf("export %s: %w", p, err)
	}
	rep.Files++
	rep.Bytes += n
	return nil
}
