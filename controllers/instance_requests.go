package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// postInstance POSTs body as JSON to an instance program's path,
// authenticated with token (the replication password), and decodes the
// answer into answer when it is not nil.
func postInstance(ctx context.Context, ip, path, token string, timeout time.Duration, body, answer any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	url := "http://" + net.JoinHostPort(ip, strconv.Itoa(layout.ProbePort)) + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	// The per-request context bounds the call, not the status client's
	// one-second timeout.
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		text, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s answered %s: %s", path, resp.Status, strings.TrimSpace(string(text)))
	}
	if answer == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(answer)
}

// replicationPassword reads the token the instance programs take from the
// operator.
func (r *DatabaseReconciler) replicationPassword(ctx context.Context, db *dbpilotv1alpha1.Database) (string, error) {
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.ReplicationSecretName()}, secret); err != nil {
		return "", fmt.Errorf("reading the replication Secret: %w", err)
	}
	return string(secret.Data[layout.KeyReplicationPassword]), nil
}
