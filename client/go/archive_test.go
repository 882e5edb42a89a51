package odyssey_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	odyssey "github.com/odyssey-ai/odyssey/client/go"
)

func writeProject(t *testing.T, root string) {
	t.Helper()
	files := map[string]string{
		"odyssey.bundle.yaml":    "name: x\n",
		"agents/main/agent.yaml": "kind: prompt\n",
		".git/file":              "never packed\n",
		"target/file":            "never packed\n",
		"node_modules/file":      "never packed\n",
		".env":                   "SECRET=1\n",
	}
	for rel, body := range files {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func entries(t *testing.T, archive []byte) []*tar.Header {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var headers []*tar.Header
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return headers
		}
		if err != nil {
			t.Fatal(err)
		}
		headers = append(headers, h)
	}
}

func TestPackProjectIsDeterministicAndSkipsHiddenAndBuildFolders(t *testing.T) {
	root := t.TempDir()
	writeProject(t, root)
	first, err := odyssey.PackProject(root)
	if err != nil {
		t.Fatal(err)
	}
	later := time.Unix(1, 0)
	if err := os.Chtimes(filepath.Join(root, "odyssey.bundle.yaml"), later, later); err != nil {
		t.Fatal(err)
	}
	second, err := odyssey.PackProject(root)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Fatal("the same folder packed to different bytes")
	}
	var names []string
	for _, h := range entries(t, first) {
		if h.Typeflag != tar.TypeReg || h.ModTime.Unix() != 0 || h.Uid != 0 {
			t.Fatalf("entry %s: type %c, mtime %v, uid %d", h.Name, h.Typeflag, h.ModTime, h.Uid)
		}
		names = append(names, h.Name)
	}
	want := []string{"agents/main/agent.yaml", "odyssey.bundle.yaml"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("packed %v, want %v", names, want)
	}
}

func TestPackProjectRefusesLinksOutOfTheProject(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "p")
	writeProject(t, root)
	if err := os.Symlink(filepath.Join(root, "odyssey.bundle.yaml"), filepath.Join(root, "alias.yaml")); err != nil {
		t.Fatal(err)
	}
	archive, err := odyssey.PackProject(root)
	if err != nil {
		t.Fatalf("a link inside the project: %v", err)
	}
	found := false
	for _, h := range entries(t, archive) {
		found = found || h.Name == "alias.yaml"
	}
	if !found {
		t.Fatal("the link inside the project was not packed")
	}

	secret := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(secret, []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, "leak.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := odyssey.PackProject(root); err == nil || !strings.Contains(err.Error(), "outside the project") {
		t.Fatalf("a link out of the project: %v", err)
	}
}
