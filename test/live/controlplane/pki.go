package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errGenerateKey   = "cannot generate a private key"
	errSignCert      = "cannot sign a certificate"
	errMarshalKey    = "cannot marshal a private key"
	errDecodePEM     = "cannot decode PEM"
	errParseCert     = "cannot parse a certificate"
	errParseKey      = "cannot parse a private key"
	errFmtWriteFile  = "cannot write %s"
	certValidity     = 24 * time.Hour
	pemCertificate   = "CERTIFICATE"
	pemPrivateKey    = "PRIVATE KEY"
	pemRSAPrivateKey = "RSA PRIVATE KEY"
)

// A CA signs the certificates of one control plane: the API server's
// serving certificate, the admin's client certificate, the controller
// manager's serving certificate. Crossplane brings its own CA (crossplane
// core init generates it); the function's certificate is signed by that one,
// see FromPEM.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
}

// NewCA generates a self-signed CA.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, errors.Wrap(err, errGenerateKey)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(certValidity),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, errors.Wrap(err, errSignCert)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, errors.Wrap(err, errParseCert)
	}
	return &CA{Cert: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der})}, nil
}

// CAFromPEM loads a CA from its PEM certificate and key, such as the one in
// Crossplane's crossplane-root-ca Secret (an RSA key in PKCS #1).
func CAFromPEM(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, errors.New(errDecodePEM)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, errors.Wrap(err, errParseCert)
	}
	var key crypto.Signer
	switch kb.Type {
	case pemRSAPrivateKey:
		key, err = x509.ParsePKCS1PrivateKey(kb.Bytes)
	default:
		var k any
		k, err = x509.ParsePKCS8PrivateKey(kb.Bytes)
		if s, ok := k.(crypto.Signer); ok {
			key = s
		}
	}
	if err != nil || key == nil {
		return nil, errors.Wrap(err, errParseKey)
	}
	return &CA{Cert: cert, Key: key, CertPEM: certPEM}, nil
}

// A KeyPair is a certificate and its key, PEM encoded.
type KeyPair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// CertOptions describe a certificate to sign.
type CertOptions struct {
	CommonName   string
	Organization []string
	DNSNames     []string
	IPs          []net.IP
	Server       bool
	Client       bool
}

// Sign issues a certificate with a new key.
func (ca *CA) Sign(o CertOptions) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, errors.Wrap(err, errGenerateKey)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: o.CommonName, Organization: o.Organization},
		DNSNames:     o.DNSNames,
		IPAddresses:  o.IPs,
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
	if o.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if o.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, errors.Wrap(err, errSignCert)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, errors.Wrap(err, errMarshalKey)
	}
	return &KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: kder}),
	}, nil
}

// Write writes the pair as <dir>/<name>.crt and <dir>/<name>.key and
// returns their paths.
func (p *KeyPair) Write(dir, name string) (string, string, error) {
	crt, key := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := writeFile(crt, p.CertPEM); err != nil {
		return "", "", err
	}
	return crt, key, writeFile(key, p.KeyPEM)
}

// newServiceAccountKey generates the key that signs service account tokens,
// PEM encoded. kube-apiserver and kube-controller-manager refuse to start
// without one, even when nothing uses tokens.
func newServiceAccountKey() ([]byte, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, errors.Wrap(err, errGenerateKey)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemRSAPrivateKey, Bytes: x509.MarshalPKCS1PrivateKey(key)}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

func writeFile(path string, b []byte) error {
	return errors.Wrapf(os.WriteFile(path, b, 0o600), errFmtWriteFile, path)
}
