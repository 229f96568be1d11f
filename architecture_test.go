package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// docPath is a path of the repository as docs/ARCHITECTURE.md writes it:
// a file or a package directory, or a package and one of its names
// (internal/runner.Run).
var docPath = regexp.MustCompile(`\b(?:cmd|internal|tools)(?:/[A-Za-z0-9_.-]+)*`)

// TestArchitectureMatchesTree keeps docs/ARCHITECTURE.md true: every path
// it names exists, and every package of the tree is named in it.
func TestArchitectureMatchesTree(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, p := range docPath.FindAllString(string(doc), -1) {
		p = strings.TrimRight(p, ".")
		if !pathExists(p) {
			t.Errorf("docs/ARCHITECTURE.md names %s, which does not exist", p)
			continue
		}
		named[pkgOf(p)] = true
	}
	for _, pkg := range goPackages(t) {
		if !named[pkg] && !named[filepath.Dir(pkg)+"/<engine>"] {
			t.Errorf("package %s is not in docs/ARCHITECTURE.md: say what it owns", pkg)
		}
	}
}

// pathExists: p is a file or directory, or dir.Name with dir a directory
// and Name exported.
func pathExists(p string) bool {
	if _, err := os.Stat(p); err == nil {
		return true
	}
	dir, name := filepath.Split(p)
	pkg, sym, ok := strings.Cut(name, ".")
	if !ok || sym == "" || !unicode.IsUpper(rune(sym[0])) {
		return false
	}
	st, err := os.Stat(filepath.Join(dir, pkg))
	return err == nil && st.IsDir()
}

// pkgOf is the package directory a documented path belongs to.
func pkgOf(p string) string {
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return p
	}
	if strings.HasSuffix(p, ".go") {
		return filepath.Dir(p)
	}
	dir, name := filepath.Split(p)
	pkg, _, _ := strings.Cut(name, ".")
	return filepath.Join(dir, pkg)
}

// goPackages lists the directories under cmd, internal and tools that hold
// Go files, test data left aside.
func goPackages(t *testing.T) []string {
	var pkgs []string
	for _, root := range []string{"cmd", "internal", "tools"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(path, ".go") && !slices.Contains(pkgs, filepath.Dir(path)) {
				pkgs = append(pkgs, filepath.Dir(path))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return pkgs
}
