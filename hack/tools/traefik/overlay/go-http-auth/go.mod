// The go.mod of github.com/abbot/go-http-auth v0.4.0 (which has none), for
// the copy that hack/tool.sh makes of it at build time: Traefik replaces the
// module by its fork github.com/containous/go-http-auth, which the module
// proxy refuses; v0.4.0 and compat.go stand in for it.
module github.com/abbot/go-http-auth

go 1.26

require (
	golang.org/x/crypto v0.56.0
	golang.org/x/net v0.58.0
)
