// Package docs holds no code: its test checks the relative links and
// anchors of the README, DEVELOPERS.md and docs/, from the repository's
// root.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// markdownLink finds inline links; the target stops at a space or a
// closing parenthesis.
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinks checks that every relative link of the README, DEVELOPERS.md
// and docs/ names a file that exists and, with a #fragment into a Markdown
// file, a heading of that file: renamed sections leave no dead link.
func TestDocLinks(t *testing.T) {
	// The paths are the repository's, as the README and DEVELOPERS.md
	// link them.
	t.Chdir("..")
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "README.md", "DEVELOPERS.md")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range markdownLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, fragment, _ := strings.Cut(target, "#")
			resolved := file
			if path != "" {
				resolved = filepath.Join(filepath.Dir(file), path)
			}
			if _, err := os.Stat(resolved); err != nil {
				t.Errorf("%s links to %s: %v", file, target, err)
				continue
			}
			if fragment == "" || !strings.HasSuffix(resolved, ".md") {
				continue
			}
			if !headingSlugs(t, resolved)[fragment] {
				t.Errorf("%s links to %s: %s has no heading whose anchor is #%s", file, target, resolved, fragment)
			}
		}
	}
}

// headingSlugs are the anchors GitHub gives the headings of a Markdown
// file: lower case, punctuation dropped, spaces as hyphens, a repeated
// heading suffixed -1, -2, ... Fenced code is skipped.
func headingSlugs(t *testing.T, file string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	slugs := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var slug strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				slug.WriteRune(r)
			case r == ' ':
				slug.WriteRune('-')
			}
		}
		s := slug.String()
		if n := seen[s]; n > 0 {
			slugs[s+"-"+strconv.Itoa(n)] = true
		} else {
			slugs[s] = true
		}
		seen[s]++
	}
	return slugs
}
