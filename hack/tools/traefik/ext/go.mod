// A stand-in for github.com/traefik/traefik/dynamic/ext, which Traefik's own
// go.mod replaces by a folder of its repository that its published module
// does not hold, and which no proxy serves: the two types its dynamic
// configuration embeds, empty (the open-source build's own are empty too).
module github.com/traefik/traefik/dynamic/ext

go 1.26
