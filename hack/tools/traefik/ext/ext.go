// Package ext holds the extension points of Traefik's dynamic configuration,
// empty as in Traefik's open-source build: HTTP is inlined in
// dynamic.HTTPConfiguration, Router in dynamic.Router.
package ext

// HTTP extends the HTTP configuration; nothing here.
type HTTP struct{}

// Router extends a router; nothing here.
type Router struct{}
