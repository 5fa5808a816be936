package v1alpha1

// EngineProfile is what dbpilot needs to know to run an engine.
type EngineProfile struct {
	// DefaultVersion is used when spec.version is unset.
	DefaultVersion string
	// Port is the engine's client port.
	Port int32
	// DataDir is where the volume is mounted.
	DataDir string
	// ConfigDir is where the generated configuration is mounted.
	ConfigDir string
	// UserID is the uid (and gid) the engine runs as in its official image.
	UserID int64
}

var engineProfiles = map[Engine]EngineProfile{
	EnginePostgres: {DefaultVersion: "16", Port: 5432, DataDir: "/var/lib/postgresql/data", ConfigDir: "/etc/dbpilot", UserID: 999},
	EngineMySQL:    {DefaultVersion: "8.4", Port: 3306, DataDir: "/var/lib/mysql", ConfigDir: "/etc/mysql/conf.d", UserID: 999},
	EngineMariaDB:  {DefaultVersion: "11.4", Port: 3306, DataDir: "/var/lib/mysql", ConfigDir: "/etc/mysql/conf.d", UserID: 999},
}

// Profile returns what dbpilot needs to run the engine, and false for an
// unknown engine.
func (e Engine) Profile() (EngineProfile, bool) {
	profile, ok := engineProfiles[e]
	return profile, ok
}
