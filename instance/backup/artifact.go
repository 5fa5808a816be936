package backup

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/objectstore"
)

// ErrChecksum is returned when an artifact's content does not match the
// checksum recorded when it was written.
var ErrChecksum = errors.New("checksum mismatch")

// Upload compresses r into the object at key and returns the artifact's
// sizes and checksum. The upload streams: nothing is staged on disk.
func Upload(ctx context.Context, store objectstore.Store, key string, r io.Reader) (layout.ArtifactFile, error) {
	pr, pw := io.Pipe()
	raw := &counter{}
	stored := &counter{}
	sum := sha256.New()
	go func() {
		zw, _ := gzip.NewWriterLevel(io.MultiWriter(pw, sum, stored), gzip.BestSpeed)
		_, err := io.Copy(zw, io.TeeReader(r, raw))
		if closeErr := zw.Close(); err == nil {
			err = closeErr
		}
		pw.CloseWithError(err)
	}()
	err := store.Put(ctx, key, pr)
	pr.CloseWithError(errors.New("upload ended"))
	if err != nil {
		return layout.ArtifactFile{}, fmt.Errorf("uploading %s: %w", key, err)
	}
	return layout.ArtifactFile{Key: key, Size: raw.n, StoredSize: stored.n, SHA256: hex.EncodeToString(sum.Sum(nil))}, nil
}

// Download decompresses the artifact into w and checks its checksum over
// the whole object, whatever the decompressor made of it: corruption is
// reported as ErrChecksum, never as the garbage it decompresses to. A
// mismatch is known only at the end: the caller discards what it wrote.
func Download(ctx context.Context, store objectstore.Store, file layout.ArtifactFile, w io.Writer) error {
	obj, err := store.Get(ctx, file.Key)
	if err != nil {
		return fmt.Errorf("downloading %s: %w", file.Key, err)
	}
	defer obj.Close()
	sum := sha256.New()
	raw := io.TeeReader(obj, sum)
	var copyErr error
	zr, err := gzip.NewReader(raw)
	if err == nil {
		_, copyErr = io.Copy(w, zr)
	} else {
		copyErr = err
	}
	if _, err := io.Copy(io.Discard, raw); err != nil {
		return fmt.Errorf("downloading %s: %w", file.Key, err)
	}
	if got := hex.EncodeToString(sum.Sum(nil)); got != file.SHA256 {
		return fmt.Errorf("%s: %w: stored sha256 %s, recorded %s", file.Key, ErrChecksum, got, file.SHA256)
	}
	if copyErr != nil {
		return fmt.Errorf("downloading %s: %w", file.Key, copyErr)
	}
	return nil
}

type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}
