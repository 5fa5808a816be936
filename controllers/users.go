package controllers

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	dbpilotv1alpha1 "github.com/dbpilot/dbpilot/api/v1alpha1"
	"github.com/dbpilot/dbpilot/controllers/desired"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// reconcileUsers keeps the users of spec.users: a Secret of each one's
// password (generated once, unless the user's passwordSecret names the
// owner's), the users the pods keep in the engine in the replication
// Secret (desired.ManagedUsers: the pods read it as a file, so no pod
// restarts). The Secret of a user no longer listed, whom the
// pods lock, is kept: it opens nothing while the user is locked, and lets
// it back in once listed again. A Database that never listed a user is
// not written to.
func (r *DatabaseReconciler) reconcileUsers(ctx context.Context, s *scope) (ctrl.Result, error) {
	db := s.db
	passwords := map[string]string{}
	var problems []string
	problemOf := map[string]string{}
	refuse := func(user, problem string) {
		problems = append(problems, problem)
		problemOf[user] = problem
	}
	for i, u := range db.Spec.Users {
		if u.Name == s.applicationUser {
			refuse(u.Name, fmt.Sprintf("spec.users[%d].name: %q is the application user (the credentials Secret's %s); it is left as it is", i, u.Name, desired.SecretKeyUsername))
			continue
		}
		if u.PasswordSecret != nil {
			password, problem := r.providedUserPassword(ctx, db, i, u)
			if problem != "" {
				refuse(u.Name, problem)
				continue
			}
			passwords[u.Name] = password
			continue
		}
		key := client.ObjectKey{Namespace: db.Namespace, Name: db.UserSecretName(u.Name)}
		secret, _, err := r.createOrReadSecret(ctx, key, func() (*corev1.Secret, error) {
			password, err := randomPassword()
			if err != nil {
				return nil, err
			}
			return desired.UserSecret(db, u.Name, password), nil
		})
		if err != nil {
			return ctrl.Result{}, err
		}
		if secret.Labels[dbpilotv1alpha1.LabelUser] != u.Name || secret.Labels[dbpilotv1alpha1.LabelDatabase] != db.Name {
			refuse(u.Name, fmt.Sprintf("spec.users[%d]: Secret %s is not dbpilot's for this user (labels %s=%s, %s=%s); the user keeps its former password",
				i, key.Name, dbpilotv1alpha1.LabelDatabase, db.Name, dbpilotv1alpha1.LabelUser, u.Name))
			continue
		}
		password := strings.TrimRight(string(secret.Data[desired.SecretKeyPassword]), "\n")
		if problem := passwordProblem(password); problem != "" {
			refuse(u.Name, fmt.Sprintf("spec.users[%d]: Secret %s key %s %s; the user keeps its former password", i, key.Name, desired.SecretKeyPassword, problem))
			continue
		}
		passwords[u.Name] = password
	}
	s.usersProblem = strings.Join(problems, "; ")
	seen, err := r.writeManagedUsers(ctx, db, passwords)
	if err != nil {
		return ctrl.Result{}, err
	}
	seen.problems = problemOf
	s.users, s.usersObserved = seen, true
	return ctrl.Result{}, nil
}

// providedUserPassword reads the password of the user of spec.users[i]
// from the owner's Secret that passwordSecret names, which is never
// written; problem says what is wrong with it (a read that fails
// included: it holds back no other user nor phase), naming the field and
// a key, never a value. The Secret's changes reconcile the Database
// (watchUserSecrets).
func (r *DatabaseReconciler) providedUserPassword(ctx context.Context, db *dbpilotv1alpha1.Database, i int, u dbpilotv1alpha1.DatabaseUser) (password, problem string) {
	field := fmt.Sprintf("spec.users[%d].passwordSecret.name", i)
	secret := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: u.PasswordSecret.Name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return "", fmt.Sprintf("%s: Secret %s does not exist; the user keeps its former password", field, u.PasswordSecret.Name)
	case err != nil:
		// The other users, and every later phase, go on.
		return "", fmt.Sprintf("%s: Secret %s cannot be read (%v); the user keeps its former password", field, u.PasswordSecret.Name, err)
	}
	password = strings.TrimRight(string(secret.Data[desired.SecretKeyPassword]), "\n")
	if problem := passwordProblem(password); problem != "" {
		return "", fmt.Sprintf("%s: Secret %s key %s %s; the user keeps its former password", field, u.PasswordSecret.Name, desired.SecretKeyPassword, problem)
	}
	if name, ok := secret.Data[desired.SecretKeyUsername]; ok && strings.TrimRight(string(name), "\n") != u.Name {
		return "", fmt.Sprintf("%s: Secret %s key %s names another user than %s; the user keeps its former password", field, u.PasswordSecret.Name, desired.SecretKeyUsername, u.Name)
	}
	return password, ""
}

// passwordProblem says what keeps password from being a user's password,
// never telling it: missing, or not UTF-8 text without NUL (the users'
// file is JSON, which would change other bytes, and no engine takes a
// NUL); "" when fine.
func passwordProblem(password string) string {
	switch {
	case password == "":
		return "is missing or empty"
	case !utf8.ValidString(password) || strings.ContainsRune(password, 0):
		return "is not UTF-8 text without NUL"
	}
	return ""
}

// writeManagedUsers puts the users the pods keep into the replication
// Secret, when they differ from those it holds, and tells what it lists
// and the key of the primary's report.
func (r *DatabaseReconciler) writeManagedUsers(ctx context.Context, db *dbpilotv1alpha1.Database, passwords map[string]string) (usersSeen, error) {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: db.Namespace, Name: db.ReplicationSecretName()}
	err := r.Client.Get(ctx, key, secret)
	if apierrors.IsNotFound(err) {
		// Created by the phase before, not cached yet.
		err = r.APIReader.Get(ctx, key, secret)
	}
	if err != nil {
		return usersSeen{}, fmt.Errorf("reading Secret %s: %w", key.Name, err)
	}
	current := secret.Data[layout.KeyUsers]
	previous, err := layout.ParseManagedUsers(current)
	if err != nil {
		// dbpilot's own value, mangled by hand: written again from
		// spec.users (a user removed meanwhile is not locked).
		log.FromContext(ctx).Error(err, "the replication Secret's users cannot be read; writing them again from spec.users", "secret", key.Name)
		previous = nil
	}
	users := desired.ManagedUsers(db.Spec.Users, passwords, previous)
	seen := usersSeen{listed: users, changed: changedEntries(previous, users), key: string(secret.Data[layout.KeyReplicationPassword])}
	seen.written, _ = time.Parse(time.RFC3339, secret.Annotations[desired.AnnotationUsersWritten])
	if len(users) == 0 && len(current) == 0 {
		return seen, nil
	}
	wanted, err := layout.FormatManagedUsers(users)
	if err != nil {
		return usersSeen{}, err
	}
	if bytes.Equal(wanted, current) {
		return seen, nil
	}
	patch := client.MergeFromWithOptions(secret.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	secret.Data[layout.KeyUsers] = wanted
	seen.written = r.clock().Now()
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	secret.Annotations[desired.AnnotationUsersWritten] = seen.written.UTC().Format(time.RFC3339)
	if err := r.Client.Patch(ctx, secret, patch, client.FieldOwner(FieldOwner)); err != nil {
		return usersSeen{}, fmt.Errorf("writing the users into Secret %s: %w", key.Name, err)
	}
	for _, name := range newlyLocked(previous, users) {
		r.Recorder.Eventf(db, nil, corev1.EventTypeNormal, dbpilotv1alpha1.EventReasonUserRemoved, "RemoveUser",
			"User %s is no longer in spec.users: it may no longer log in and its sessions end; what it owns and its password's Secret are kept", name)
	}
	return seen, nil
}

// newlyLocked names the users users locks that previous did not.
func newlyLocked(previous, users []layout.ManagedUser) []string {
	var names []string
	for _, u := range users {
		if u.Locked && !slices.ContainsFunc(previous, func(p layout.ManagedUser) bool { return p.Name == u.Name && p.Locked }) {
			names = append(names, u.Name)
		}
	}
	return names
}

// changedEntries names the users of users whose entry previous does not
// hold as it is.
func changedEntries(previous, users []layout.ManagedUser) map[string]bool {
	changed := map[string]bool{}
	for _, u := range users {
		if !slices.Contains(previous, u) {
			changed[u.Name] = true
		}
	}
	return changed
}
