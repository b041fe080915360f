// Package state is mnemo's state folder (state.dir, default data/state):
// the data lock, the control socket, the reflection and intake journals,
// the index cache, the file history and the terminal chat's history. It
// holds what people said, so it is mnemo's alone.
//
// Open makes the folder 0700 when it is missing and keeps it so: a looser
// folder of this user is tightened to 0700, a looser folder of another
// user is refused with the fix (run as its owner, or chmod it), since
// whoever else may write there could plant links or files mnemo would
// trust. The folder is then opened as an os.Root and the files in it are
// opened through that root: a symbolic link in the state folder that
// leads out of it is never followed (a link that stays inside is
// harmless: it leads to another of mnemo's own files).
package state
