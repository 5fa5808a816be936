package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"path"
	"sort"
	"strings"

	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/objectstore"
)

// basePrefix holds the base backups: base/NAME/ARTIFACTS and
// base/NAME/manifest.json, written last.
const basePrefix = "base/"

// ArtifactKey is the object key of one of a base backup's artifacts.
func ArtifactKey(backup, artifact string) string { return basePrefix + backup + "/" + artifact }

func manifestKey(backup string) string { return ArtifactKey(backup, "manifest.json") }

// WriteManifest completes a base backup.
func WriteManifest(ctx context.Context, store objectstore.Store, m layout.BackupManifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return store.Put(ctx, manifestKey(m.Name), bytes.NewReader(data))
}

// ReadManifest reads a complete base backup's manifest;
// objectstore.ErrNotFound says there is no such complete backup.
func ReadManifest(ctx context.Context, store objectstore.Store, backup string) (layout.BackupManifest, error) {
	var m layout.BackupManifest
	err := readJSON(ctx, store, manifestKey(backup), &m)
	return m, err
}

// Manifests lists the complete base backups, oldest first.
func Manifests(ctx context.Context, store objectstore.Store) ([]layout.BackupManifest, error) {
	objects, err := store.List(ctx, basePrefix)
	if err != nil {
		return nil, err
	}
	var manifests []layout.BackupManifest
	for _, o := range objects {
		if path.Base(o.Key) != "manifest.json" {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(o.Key, basePrefix), "/manifest.json")
		m, err := ReadManifest(ctx, store, name)
		if err != nil {
			return nil, err
		}
		manifests = append(manifests, m)
	}
	sort.SliceStable(manifests, func(i, j int) bool { return manifests[i].EndTime.Before(manifests[j].EndTime) })
	return manifests, nil
}

// DeleteBackup removes a base backup: its manifest first, so a half-deleted
// backup is never taken for a complete one.
func DeleteBackup(ctx context.Context, store objectstore.Store, backup string) error {
	if err := store.Delete(ctx, manifestKey(backup)); err != nil {
		return err
	}
	objects, err := store.List(ctx, basePrefix+backup+"/")
	if err != nil {
		return err
	}
	for _, o := range objects {
		if err := store.Delete(ctx, o.Key); err != nil {
			return err
		}
	}
	return nil
}
