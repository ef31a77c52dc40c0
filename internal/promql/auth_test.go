package promql

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testCAPEM is a self-signed certificate, PEM encoded.
func testCAPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("cannot generate a key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test-ca"},
		NotBefore:             time.Unix(0, 0),
		NotAfter:              time.Unix(1<<33, 0),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("cannot create a certificate: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestAuthFrom(t *testing.T) {
	ca := testCAPEM(t)
	type want struct {
		auth Auth
		err  string
	}
	cases := map[string]struct {
		reason string
		data   map[string][]byte
		want   want
	}{
		"Bearer": {
			reason: "A token is a bearer token.",
			data:   map[string][]byte{"token": []byte("s3cr3t")},
			want:   want{auth: Auth{BearerToken: "s3cr3t"}},
		},
		"BearerLineEnd": {
			reason: "One line end that ends the token (echo's) is dropped: a header could not carry it.",
			data:   map[string][]byte{"token": []byte("s3cr3t\r\n")},
			want:   want{auth: Auth{BearerToken: "s3cr3t"}},
		},
		"BearerControl": {
			reason: "A token holding a control character cannot stand in a header: an error that does not quote it.",
			data:   map[string][]byte{"token": []byte("s3c\nr3t")},
			want:   want{err: "credentials' token holds a control character, which an HTTP header cannot carry"},
		},
		"Basic": {
			reason: "A username and a password are basic auth; a password may hold anything but a final line end.",
			data:   map[string][]byte{"username": []byte("reader\n"), "password": []byte("p: a ss\n")},
			want:   want{auth: Auth{Username: "reader", Password: "p: a ss"}},
		},
		"BearerWithCA": {
			reason: "A CA bundle goes with a token.",
			data:   map[string][]byte{"token": []byte("t"), "ca.crt": ca},
			want:   want{auth: Auth{BearerToken: "t", CA: ca}},
		},
		"BasicWithCA": {
			reason: "A CA bundle goes with basic auth.",
			data:   map[string][]byte{"username": []byte("u"), "password": []byte("p"), "ca.crt": ca},
			want:   want{auth: Auth{Username: "u", Password: "p", CA: ca}},
		},
		"CAOnly": {
			reason: "A CA bundle alone is https to a private CA, without auth.",
			data:   map[string][]byte{"ca.crt": ca},
			want:   want{auth: Auth{CA: ca}},
		},
		"Mixed": {
			reason: "A token with a username is ambiguous.",
			data:   map[string][]byte{"token": []byte("t"), "username": []byte("u"), "password": []byte("p")},
			want:   want{err: "credentials hold both a token and a username or password: give a token (bearer) or a username and password (basic), not both"},
		},
		"MixedPasswordOnly": {
			reason: "A token with a password is ambiguous.",
			data:   map[string][]byte{"token": []byte("t"), "password": []byte("p")},
			want:   want{err: "credentials hold both a token and a username or password: give a token (bearer) or a username and password (basic), not both"},
		},
		"UsernameOnly": {
			reason: "Basic auth needs a password.",
			data:   map[string][]byte{"username": []byte("u")},
			want:   want{err: "credentials hold username without password: basic auth needs both"},
		},
		"PasswordOnly": {
			reason: "Basic auth needs a username.",
			data:   map[string][]byte{"password": []byte("p")},
			want:   want{err: "credentials hold password without username: basic auth needs both"},
		},
		"ColonUsername": {
			reason: "Basic auth cannot carry a colon in the username.",
			data:   map[string][]byte{"username": []byte("a:b"), "password": []byte("p")},
			want:   want{err: "credentials' username holds a colon, which basic auth cannot carry"},
		},
		"EmptyValue": {
			reason: "An empty value is a mistake, not no auth.",
			data:   map[string][]byte{"token": []byte("\n")},
			want:   want{err: "credentials' token is empty"},
		},
		"EmptyPassword": {
			reason: "An empty password is a mistake.",
			data:   map[string][]byte{"username": []byte("u"), "password": {}},
			want:   want{err: "credentials' password is empty"},
		},
		"Unknown": {
			reason: "Unknown keys (a typo) are named, sorted, never their values.",
			data:   map[string][]byte{"bearer-token": []byte("t"), "Token": []byte("t"), "token": []byte("t")},
			want:   want{err: `credentials hold unknown keys "Token", "bearer-token"; known: token (a bearer token), username and password (basic auth), ca.crt (PEM)`},
		},
		"UnknownBounded": {
			reason: "Unknown keys are listed up to 20, each quoted at most 256 characters.",
			data: func() map[string][]byte {
				m := map[string][]byte{}
				for i := range 30 {
					m[fmt.Sprintf("k%02d", i)+strings.Repeat("x", 300)] = nil
				}
				return m
			}(),
			want: want{err: "credentials hold unknown keys " + func() string {
				l := make([]string, 0, 20)
				for i := range 20 {
					l = append(l, fmt.Sprintf(`"k%02d%s...(303 characters)"`, i, strings.Repeat("x", 253)))
				}
				return strings.Join(l, ", ")
			}() + ", (and 10 more); known: token (a bearer token), username and password (basic auth), ca.crt (PEM)"},
		},
		"Empty": {
			reason: "Credentials with nothing in them are a mistake.",
			data:   map[string][]byte{},
			want:   want{err: "credentials hold none of the keys token, username and password, ca.crt"},
		},
		"NotPEM": {
			reason: "A ca.crt that holds no certificate is refused up front.",
			data:   map[string][]byte{"token": []byte("t"), "ca.crt": []byte("not a certificate")},
			want:   want{err: "credentials' ca.crt holds no PEM certificate"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := AuthFrom(tc.data)
			got := want{auth: a, err: errText(err)}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nAuthFrom(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestAuthFromCopiesCA(t *testing.T) {
	// The CA bundle is kept: a caller reusing the request's bytes must not
	// change it.
	ca := testCAPEM(t)
	data := map[string][]byte{"ca.crt": ca}
	a, err := AuthFrom(data)
	if err != nil {
		t.Fatalf("AuthFrom: %v", err)
	}
	want := string(ca)
	ca[30] ^= 0xff
	if string(a.CA) != want {
		t.Errorf("AuthFrom(...).CA changed with the input's bytes")
	}
}
