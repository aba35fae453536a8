package profiles

// Principal identifies who a request is issued for: the rungs of the ladder
// above the request itself.
type Principal struct {
	Org     string `json:"org"`
	Team    string `json:"team"`
	Project string `json:"project"`
	Key     string `json:"key"`
}

// String renders the principal as "org/team/project/key" for logs and cache keys.
func (p Principal) String() string {
	return p.Org + "/" + p.Team + "/" + p.Project + "/" + p.Key
}
