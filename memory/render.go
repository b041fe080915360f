package memory

import (
	"fmt"
	"strconv"
	"strings"
)

// DefaultIndexBudget is the default byte budget of the iteration-1 index.
const DefaultIndexBudget = 4096

const (
	indexHeader = "Available memory:\n"
	indexFooter = "\nUse memory_read to load relevant files before responding."
	indexNone   = "Available memory: none yet."
)

// FormatSize renders a byte count as the index shows it: 320B, 1.2KB, 3MB.
func FormatSize(n int64) string {
	const k = 1024
	switch {
	case n < k:
		return strconv.FormatInt(n, 10) + "B"
	case n < k*k:
		return trimZero(float64(n)/k) + "KB"
	}
	return trimZero(float64(n)/(k*k)) + "MB"
}

func trimZero(f float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(f, 'f', 1, 64), ".0")
}

// IndexLine is one file as the index shows it.
func IndexLine(f FileInfo) string {
	return "- " + f.Path + " (" + FormatSize(f.Size) + "): " + oneLine(f.Summary, maxSummaryLen)
}

// RenderIndex renders the memory index injected at iteration 1, in the
// order given (List's: facts first, then the newest episodes), within
// budget bytes. Files past the budget are never dropped silently: a last
// line says how many were left out.
func RenderIndex(files []FileInfo, budget int) string {
	return renderIndex(len(files), func(i int) FileInfo { return files[i] }, budget)
}

// renderIndex is RenderIndex of n files, the i-th given by at: it asks
// only for the files it shows (a view's index is never copied whole).
func renderIndex(n int, at func(int) FileInfo, budget int) string {
	if n == 0 {
		return indexNone
	}
	if budget <= 0 {
		budget = DefaultIndexBudget
	}
	var b strings.Builder
	b.WriteString(indexHeader)
	for i := range n {
		line := IndexLine(at(i)) + "\n"
		rest := n - i - 1
		room := budget - b.Len() - len(indexFooter)
		if rest > 0 {
			room -= omittedLen(rest) // keep space to say what is left out
		}
		if len(line) > room {
			b.WriteString(omittedLine(n - i))
			break
		}
		b.WriteString(line)
	}
	b.WriteString(indexFooter)
	return b.String()
}

func omittedLine(n int) string {
	noun := "files"
	if n == 1 {
		noun = "file"
	}
	return fmt.Sprintf("- (%d more %s not shown; see memory_list)\n", n, noun)
}

// omittedLen is len(omittedLine(n)), without formatting it: RenderIndex
// asks for every line of every message's index.
func omittedLen(n int) int {
	l := len("- ( more files not shown; see memory_list)\n")
	if n == 1 {
		l-- // "file"
	}
	for ; n >= 10; n /= 10 {
		l++
	}
	return l + 1
}
