// Package backup moves backups between an instance and its destination:
// compressed, checksummed artifacts, WAL segments, manifests, and the plan
// of what retention keeps. The engines take and restore the backups.
package backup

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dbpilot/dbpilot/instance/layout"
	"github.com/dbpilot/dbpilot/internal/objectstore"
)

// Open connects to the target: its credentials are read from their files
// now, so a rotated Secret is picked up by the next call.
func Open(t layout.BackupTarget) (objectstore.Store, error) {
	switch {
	case t.S3 != nil && t.Dir == "":
		read := func(key string, required bool) ([]byte, error) {
			data, err := os.ReadFile(filepath.Join(t.S3.CredentialsDir, key))
			if errors.Is(err, os.ErrNotExist) && !required {
				return nil, nil
			}
			if err != nil {
				return nil, fmt.Errorf("reading the object store's credential %q: %w", key, err)
			}
			return data, nil
		}
		id, err := read(layout.KeyAccessKeyID, true)
		if err != nil {
			return nil, err
		}
		secret, err := read(layout.KeySecretAccessKey, true)
		if err != nil {
			return nil, err
		}
		ca, err := read(layout.KeyCA, false)
		if err != nil {
			return nil, err
		}
		return objectstore.NewS3(objectstore.S3Config{Endpoint: t.S3.Endpoint, Region: t.S3.Region, Bucket: t.S3.Bucket, Prefix: t.S3.Prefix,
			AccessKeyID: strings.TrimSpace(string(id)), SecretAccessKey: strings.TrimSpace(string(secret)), CA: ca})
	case t.S3 == nil && t.Dir != "":
		return objectstore.Dir{Root: t.Dir}, nil
	}
	return nil, errors.New("a backup target sets exactly one of s3 or dir")
}

// TargetFromEnv reads the backup target from layout.BackupTargetEnv; nil
// when it is unset.
func TargetFromEnv() (*layout.BackupTarget, error) {
	value := os.Getenv(layout.BackupTargetEnv)
	if value == "" {
		return nil, nil
	}
	var t layout.BackupTarget
	if err := json.Unmarshal([]byte(value), &t); err != nil {
		return nil, fmt.Errorf("%s: %w", layout.BackupTargetEnv, err)
	}
	return &t, nil
}

// RestoreSourceFromEnv reads the restore source from
// layout.RestoreSourceEnv; nil when it is unset.
func RestoreSourceFromEnv() (*layout.RestoreSource, error) {
	value := os.Getenv(layout.RestoreSourceEnv)
	if value == "" {
		return nil, nil
	}
	var s layout.RestoreSource
	if err := json.Unmarshal([]byte(value), &s); err != nil {
		return nil, fmt.Errorf("%s: %w", layout.RestoreSourceEnv, err)
	}
	if s.Backup == "" {
		return nil, fmt.Errorf("%s names no backup", layout.RestoreSourceEnv)
	}
	return &s, nil
}
