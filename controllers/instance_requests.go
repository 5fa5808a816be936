package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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
func postInstance(ctx context.Context, target instanceTarget, path, token string, timeout time.Duration, body, answer any) error {
	return callInstance(ctx, http.MethodPost, target, path, token, timeout, body, answer)
}

// instanceAnswer is an instance program's answer other than a success.
type instanceAnswer struct {
	path   string
	status int
	text   string
}

func (e *instanceAnswer) Error() string {
	return fmt.Sprintf("%s answered %d %s: %s", e.path, e.status, http.StatusText(e.status), e.text)
}

// answeredStatus is the HTTP status of an instance's answer in err; 0 when
// the instance did not answer.
func answeredStatus(err error) int {
	var answer *instanceAnswer
	if errors.As(err, &answer) {
		return answer.status
	}
	return 0
}

// callInstance sends a request (body as JSON, when not nil) to an instance
// program's path, authenticated with token, and decodes a 2xx answer into
// answer when it is not nil; any other answer is an *instanceAnswer.
func callInstance(ctx context.Context, method string, target instanceTarget, path, token string, timeout time.Duration, body, answer any) error {
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		reader = bytes.NewReader(data)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, target.base+path, reader)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	// The per-request context bounds the call.
	resp, err := target.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		text, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &instanceAnswer{path: path, status: resp.StatusCode, text: strings.TrimSpace(string(text))}
	}
	if answer == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(answer)
}

// replicationPasswordOf reads the token the instance programs of db take
// from the operator.
func replicationPasswordOf(ctx context.Context, c client.Client, db *dbpilotv1alpha1.Database) (string, error) {
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: db.ReplicationSecretName()}, secret); err != nil {
		return "", fmt.Errorf("reading the replication Secret: %w", err)
	}
	return string(secret.Data[layout.KeyReplicationPassword]), nil
}

// replicationPassword reads the token the instance programs take from the
// operator.
func (r *DatabaseReconciler) replicationPassword(ctx context.Context, db *dbpilotv1alpha1.Database) (string, error) {
	return replicationPasswordOf(ctx, r.Client, db)
}
