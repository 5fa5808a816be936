package layout

import (
	"strings"
	"testing"
	"time"
)

func TestManagedUsersRoundTrip(t *testing.T) {
	users := []ManagedUser{{Name: "report", Access: AccessReadOnly, Password: "p"}, {Name: "etl", Locked: true}}
	data, err := FormatManagedUsers(users)
	if err != nil {
		t.Fatal(err)
	}
	again, err := FormatManagedUsers([]ManagedUser{users[1], users[0]})
	if err != nil || string(again) != string(data) {
		t.Errorf("the same users in another order give other bytes:\n%s\n%s", data, again)
	}
	parsed, err := ParseManagedUsers(data)
	if err != nil || len(parsed) != 2 || parsed[0].Name != "etl" || !parsed[0].Locked || parsed[1].Password != "p" {
		t.Errorf("ParseManagedUsers(%s) = %+v, %v", data, parsed, err)
	}
	if none, err := ParseManagedUsers(nil); err != nil || none != nil {
		t.Errorf("no data: %+v, %v", none, err)
	}
}

func TestParseManagedUsersRefusesWithoutTellingAPassword(t *testing.T) {
	for data, want := range map[string]string{
		`{"name":"x"}`: "not a JSON list",
		`[{"access":"ReadOnly","password":"secret-1"}]`:                                       "has no name",
		`[{"name":"a","access":"ReadOnly","password":"secret-1"},{"name":"a","locked":true}]`: "listed twice",
		`[{"name":"a","access":"Admin","password":"secret-1"}]`:                               `access "Admin"`,
		`[{"name":"a","access":"ReadWrite"}]`:                                                 "no password",
		`[{"name":"a","access":"ReadWrite","password":"secret-1","connectionLimit":-2}]`:      "negative connection limit -2",
		`[{"name":"a","access":"ReadWrite","password":"secret-1","validUntil":"tomorrow"}]`:   `validUntil that is no RFC 3339 instant: "tomorrow"`,
	} {
		_, err := ParseManagedUsers([]byte(data))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret-1") {
			t.Errorf("ParseManagedUsers(%s) = %v, want an error saying %q without the password", data, err, want)
		}
	}
}

func TestLockedFirst(t *testing.T) {
	users := []ManagedUser{{Name: "a", Access: AccessReadOnly, Password: "p"}, {Name: "b", Locked: true}, {Name: "c", Access: AccessReadWrite, Password: "p"}, {Name: "d", Locked: true}}
	var names string
	for _, u := range LockedFirst(users) {
		names += u.Name
	}
	if names != "bdac" {
		t.Errorf("LockedFirst: %s, want bdac", names)
	}
}

func TestManagedUserDigestIsKeyed(t *testing.T) {
	u := ManagedUser{Name: "report", Access: AccessReadOnly, Password: "p"}
	d := ManagedUserDigest("key", u)
	if d != ManagedUserDigest("key", u) {
		t.Error("the same entry and key give two digests")
	}
	other := u
	other.Password = "q"
	for what, digest := range map[string]string{
		"another key":      ManagedUserDigest("other", u),
		"another password": ManagedUserDigest("key", other),
		"no key":           FileDigest([]byte(`{"name":"report","access":"ReadOnly","password":"p"}`)),
	} {
		if digest == d {
			t.Errorf("%s gives the same digest", what)
		}
	}
}

// TestInForceLocksFromValidUntil: an entry is kept as written before its
// validUntil and locked, without its password, from that instant on (one
// that cannot be read locks it too); without validUntil, or locked
// already, it is as written.
func TestInForceLocksFromValidUntil(t *testing.T) {
	until := time.Date(2027, 1, 31, 18, 0, 0, 0, time.UTC)
	u := ManagedUser{Name: "etl", Access: AccessReadWrite, Password: "p", ConnectionLimit: 3, ValidUntil: until.Format(time.RFC3339)}
	locked := ManagedUser{Name: "etl", Locked: true}
	for _, c := range []struct {
		what string
		user ManagedUser
		at   time.Time
		want ManagedUser
	}{
		{"a second before", u, until.Add(-time.Second), u},
		{"at the instant", u, until, locked},
		{"after", u, until.Add(time.Hour), locked},
		{"without validUntil", ManagedUser{Name: "etl", Access: AccessReadOnly, Password: "p"}, until, ManagedUser{Name: "etl", Access: AccessReadOnly, Password: "p"}},
		{"locked already", ManagedUser{Name: "etl", Locked: true, ValidUntil: "2020-01-01T00:00:00Z"}, until, ManagedUser{Name: "etl", Locked: true, ValidUntil: "2020-01-01T00:00:00Z"}},
		{"unreadable", ManagedUser{Name: "etl", Access: AccessReadOnly, Password: "p", ValidUntil: "soon"}, until.Add(-time.Hour), locked},
	} {
		if got := c.user.InForce(c.at); got != c.want {
			t.Errorf("%s: InForce = %+v, want %+v", c.what, got, c.want)
		}
	}
	if got := UsersInForce([]ManagedUser{u, {Name: "report", Access: AccessReadOnly, Password: "q"}}, until); len(got) != 2 || got[0] != locked || got[1].Password != "q" {
		t.Errorf("UsersInForce = %+v", got)
	}
}
