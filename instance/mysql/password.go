package mysql

import (
	"crypto/sha1" //nolint:gosec // mysql_native_password is defined with SHA-1
	"encoding/hex"
	"strings"
)

// nativePasswordHash is the mysql_native_password hash of a password, as
// MariaDB stores it: '*' and the upper-case hex of SHA1(SHA1(password)).
// Sending the hash keeps the password out of the server's logs.
func nativePasswordHash(password string) string {
	first := sha1.Sum([]byte(password)) //nolint:gosec // the format is SHA-1
	second := sha1.Sum(first[:])        //nolint:gosec // the format is SHA-1
	return "*" + strings.ToUpper(hex.EncodeToString(second[:]))
}

// quoteString quotes s as an SQL string literal.
func quoteString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}

// quoteIdentifier quotes s as an identifier.
func quoteIdentifier(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
