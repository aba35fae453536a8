// Package profiles loads a configuration directory's sluice.toml (server,
// store, upstreams, keys, routes) and its routing profiles, one file per rung
// of the ladder org → team → project → key, and merges each profile field
// separately down the ladder (the request's own routing object last), every
// merged value remembering the rung and file that set it. Every problem comes
// back as a located diagnostic (file:line, or file#/json/pointer) with a
// stable code.
package profiles
