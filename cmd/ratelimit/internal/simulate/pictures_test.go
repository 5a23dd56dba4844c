package simulate_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/a7d3e0dd/ratelimit/cmd/ratelimit/internal/simulate"
)

// dir is where the pictures are checked in, from this package's directory.
const dir = "../../../../docs/pictures"

const regenerate = "go run ./cmd/ratelimit simulate -out docs/pictures"

// memoryPictures draws every picture as the command does.
func memoryPictures(t *testing.T) []simulate.Picture {
	t.Helper()
	pics, err := simulate.Pictures(context.Background(), simulate.Memory)
	if err != nil {
		t.Fatal(err)
	}
	return pics
}

// TestPicturesUpToDate fails when a checked-in picture differs from what the code draws now,
// or when docs/pictures holds a picture the code no longer draws.
func TestPicturesUpToDate(t *testing.T) {
	var want []string
	for _, p := range memoryPictures(t) {
		want = append(want, p.File)
		got, err := os.ReadFile(filepath.Join(dir, p.File))
		switch {
		case errors.Is(err, os.ErrNotExist):
			t.Errorf("docs/pictures/%s is missing; from the repository's root, run\n\t%s", p.File, regenerate)
		case err != nil:
			t.Error(err)
		case !bytes.Equal(got, p.SVG):
			t.Errorf("docs/pictures/%s is stale: the code draws it differently now; from the repository's root, run\n\t%s\nand look at the pictures before committing them", p.File, regenerate)
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !slices.Contains(want, filepath.Base(f)) {
			t.Errorf("docs/pictures/%s is drawn by nothing any more: delete it", filepath.Base(f))
		}
	}
}

// TestPicturesDeterministic: two runs draw the same bytes, so the pictures can be compared.
func TestPicturesDeterministic(t *testing.T) {
	a, b := memoryPictures(t), memoryPictures(t)
	for i := range a {
		if !bytes.Equal(a[i].SVG, b[i].SVG) {
			t.Errorf("%s: two runs drew different documents", a[i].File)
		}
	}
}

// TestPicturesWellFormed: every picture is one well-formed svg element with its size.
func TestPicturesWellFormed(t *testing.T) {
	for _, p := range memoryPictures(t) {
		dec := xml.NewDecoder(bytes.NewReader(p.SVG))
		var root *xml.StartElement
		depth := 0
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", p.File, err)
			}
			switch el := tok.(type) {
			case xml.StartElement:
				if depth == 0 {
					if root != nil {
						t.Errorf("%s: a second root element <%s>", p.File, el.Name.Local)
					}
					root = &el
				}
				depth++
			case xml.EndElement:
				depth--
			}
		}
		if root == nil || root.Name.Local != "svg" || root.Name.Space != "http://www.w3.org/2000/svg" {
			t.Fatalf("%s: the root is %v, want an svg element", p.File, root)
		}
		for _, name := range []string{"width", "height", "viewBox"} {
			if !slices.ContainsFunc(root.Attr, func(a xml.Attr) bool { return a.Name.Local == name }) {
				t.Errorf("%s: the svg element has no %s", p.File, name)
			}
		}
	}
}
