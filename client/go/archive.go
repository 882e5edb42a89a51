package odyssey

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// PackProject returns the bundle project in dir as a tar + gzip archive for BuildBundle.
//
// The archive is deterministic (regular files only, sorted, mtime 0, owner 0, mode 0644
// or 0755), so building the same folder twice uploads the same bytes. Hidden entries,
// target/ and node_modules/ are skipped at any depth. A symlink is packed as the file it
// points to when that stays inside the project; one pointing outside is an error.
func PackProject(dir string) ([]byte, error) {
	root, err := filepath.Abs(dir)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open project folder %s: %w", dir, err)
	}
	if info, err := os.Stat(root); err != nil || !info.IsDir() {
		return nil, fmt.Errorf("%s: not a folder", dir)
	}
	type found struct{ rel, path string }
	var files []found
	err = filepath.WalkDir(root, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == root {
			return nil
		}
		name := entry.Name()
		if strings.HasPrefix(name, ".") || name == "target" || name == "node_modules" {
			if entry.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		real := path
		if entry.Type()&fs.ModeSymlink != 0 {
			if real, err = inside(root, path); err != nil {
				return err
			}
			info, err := os.Stat(real)
			if err != nil {
				return err
			}
			if info.IsDir() {
				return fmt.Errorf("%s: a link to a folder is not packed; link the files", path)
			}
		} else if entry.IsDir() {
			return nil
		}
		info, err := os.Stat(real)
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file", path)
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files = append(files, found{filepath.ToSlash(rel), real})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })

	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		data, err := os.ReadFile(f.path)
		if err != nil {
			return nil, err
		}
		info, err := os.Stat(f.path)
		if err != nil {
			return nil, err
		}
		mode := int64(0o644)
		if info.Mode()&0o100 != 0 {
			mode = 0o755
		}
		header := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     f.rel,
			Size:     int64(len(data)),
			Mode:     mode,
			ModTime:  time.Unix(0, 0),
		}
		if err := tw.WriteHeader(header); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func inside(root, link string) (string, error) {
	target, err := filepath.EvalSymlinks(link)
	if err != nil {
		return "", fmt.Errorf("%s: %w", link, err)
	}
	rel, err := filepath.Rel(root, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%s: the link points outside the project (%s)", link, target)
	}
	return target, nil
}
