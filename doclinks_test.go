package mnemo_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestMarkdownLinks: every relative link in the repository's Markdown
// files names a file or folder that exists, and every #anchor a heading
// (or an HTML id) of the file it points into, by GitHub's rule. Links in
// code blocks and code spans are not links; web addresses are not
// checked (only loopback network in tests).
func TestMarkdownLinks(t *testing.T) {
	files := markdownFiles(t, ".")
	if len(files) < 5 {
		t.Fatalf("found %d Markdown files; is the test run from the repository root?", len(files))
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		anchors[path] = headingAnchors(string(b))
		return anchors[path]
	}
	checked := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range markdownLinks(string(b)) {
			if problem := checkLink(file, l.target, anchorsOf); problem != "" {
				t.Errorf("%s:%d: link %q: %s", file, l.line, l.target, problem)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Errorf("only %d links checked; is the link finder broken?", checked)
	}
}

// checkLink says what is wrong with target, linked from file, or "".
func checkLink(file, target string, anchorsOf func(string) map[string]bool) string {
	if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	dest := file
	if path != "" {
		if strings.HasPrefix(path, "/") {
			return "an absolute path; link relative to this file"
		}
		dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
		info, err := os.Stat(dest)
		if err != nil {
			return "no such file or folder " + dest
		}
		if info.IsDir() || anchor == "" {
			return ""
		}
	}
	if anchor == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	if !anchorsOf(dest)[anchor] {
		return fmt.Sprintf("%s has no heading with the anchor #%s", dest, anchor)
	}
	return ""
}

// markdownFiles lists the Markdown files under root, but for hidden
// folders and testdata (memory files of tests, not documentation).
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

type link struct {
	line   int
	target string
}

var (
	inlineLinkRe = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]*(?:\([^()\s]*\)[^()\s<>]*)*)>?(?:\s+"[^"]*")?\s*\)`)
	refDefRe     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	codeSpanRe   = regexp.MustCompile("(`+)[^`]*?(`+)")
	htmlIDRe     = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// markdownLinks finds the links of a Markdown text, outside fenced code
// blocks and code spans.
func markdownLinks(text string) []link {
	var out []link
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		if f := fenceOf(line); f != "" {
			switch {
			case fence == "":
				fence = f
			case strings.HasPrefix(f, fence[:1]) && len(f) >= len(fence):
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		line = codeSpanRe.ReplaceAllString(line, "")
		if m := refDefRe.FindStringSubmatch(line); m != nil {
			out = append(out, link{i + 1, m[1]})
			continue
		}
		for _, m := range inlineLinkRe.FindAllStringSubmatch(line, -1) {
			out = append(out, link{i + 1, m[1]})
		}
	}
	return out
}

// fenceOf is the fence (``` or ~~~, and longer) that line opens or
// closes, or "".
func fenceOf(line string) string {
	trimmed := strings.TrimLeft(line, " ")
	if len(line)-len(trimmed) > 3 {
		return ""
	}
	for _, c := range []string{"`", "~"} {
		n := len(trimmed) - len(strings.TrimLeft(trimmed, c))
		if n >= 3 {
			return trimmed[:n]
		}
	}
	return ""
}

// headingAnchors are the anchors GitHub gives a Markdown text's headings
// (and its HTML ids).
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(text, "\n") {
		if f := fenceOf(line); f != "" {
			if fence == "" {
				fence = f
			} else if strings.HasPrefix(f, fence[:1]) && len(f) >= len(fence) {
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		for _, m := range htmlIDRe.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		trimmed := strings.TrimLeft(line, " ")
		level := len(trimmed) - len(strings.TrimLeft(trimmed, "#"))
		if level < 1 || level > 6 || len(line)-len(trimmed) > 3 || (len(trimmed) > level && trimmed[level] != ' ') {
			continue
		}
		slug := GitHubAnchor(strings.TrimRight(strings.TrimSpace(trimmed[level:]), "#"))
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

var (
	mdLinkRe = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag  = regexp.MustCompile(`<[^>]+>`)
)

// GitHubAnchor is the anchor GitHub makes of a heading's text: links
// and HTML tags reduced to their text, lower case, every character but
// letters, digits, spaces, '-' and '_' dropped, spaces made '-'.
func GitHubAnchor(heading string) string {
	heading = mdLinkRe.ReplaceAllString(heading, "$1")
	heading = htmlTag.ReplaceAllString(heading, "")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestGitHubAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"Deploying mnemo":                     "deploying-mnemo",
		"`mnemo serve`":                       "mnemo-serve",
		"Backup, upgrade, scaling":            "backup-upgrade-scaling",
		"Where the tokens go":                 "where-the-tokens-go",
		"What's new? (v1.2)":                  "whats-new-v12",
		"A [link](x.md) here":                 "a-link-here",
		"snake_case and ü":                    "snake_case-and-ü",
		"Two  spaces":                         "two--spaces",
		"`memory.dataDir` / `state.dir`":      "memorydatadir--statedir",
		"Slack & Discord — the same pipeline": "slack--discord--the-same-pipeline",
	} {
		if got := GitHubAnchor(heading); got != want {
			t.Errorf("GitHubAnchor(%q) = %q, want %q", heading, got, want)
		}
	}
	a := headingAnchors("# A\n## A\n```\n# not a heading\n```\n## A\n#not\n<a name=\"x\"></a>\n")
	for _, want := range []string{"a", "a-1", "a-2", "x"} {
		if !a[want] {
			t.Errorf("no anchor %q in %v", want, a)
		}
	}
	if a["not-a-heading"] || a["not"] {
		t.Errorf("anchors of a code block or a non-heading: %v", a)
	}
	links := markdownLinks("[a](x.md) `[b](y.md)` ![c](img.png \"t\")\n```\n[d](z.md)\n```\n[ref]: ../w.md#q\n")
	if fmt.Sprint(links) != "[{1 x.md} {1 img.png} {5 ../w.md#q}]" {
		t.Errorf("links = %v", links)
	}
}
