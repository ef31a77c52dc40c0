package admission

// Hand-written matchers for the hottest patterns: each is equivalent to its
// regular expression (FuzzMatchers checks it) and several times faster, and
// the function runs them on every header and name of every route.

// matchHeaderName is patHeaderName: an RFC 7230 token.
func matchHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return true
}

func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// matchHeaderValue is patHeaderValue: visible ASCII characters, with single
// spaces or tabs between them.
func matchHeaderValue(s string) bool {
	if s == "" {
		return false
	}
	blank := true // A value cannot start with a blank.
	for i := range len(s) {
		switch c := s[i]; {
		case '!' <= c && c <= '~':
			blank = false
		case c == ' ' || c == '\t':
			if blank {
				return false
			}
			blank = true
		default:
			return false
		}
	}
	return !blank
}

// matchSubdomain is patSubdomain: lower case DNS labels joined by dots.
func matchSubdomain(s string) bool {
	if s == "" {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if !matchLabel(s[start:i]) {
				return false
			}
			start = i + 1
		}
	}
	return true
}

// matchLabel is patNamespace: a lower case DNS label, of any length.
func matchLabel(s string) bool {
	if s == "" || !isLowerAlnum(s[0]) || !isLowerAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if !isLowerAlnum(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// matchHostname is patHostname: a subdomain, with an optional "*." first.
func matchHostname(s string) bool {
	if len(s) >= 2 && s[0] == '*' && s[1] == '.' {
		s = s[2:]
	}
	return matchSubdomain(s)
}

// matchGroup is patGroup: empty or a subdomain.
func matchGroup(s string) bool { return s == "" || matchSubdomain(s) }

// matchKind is patKind: a letter, then letters, digits or dashes, not ending
// with a dash.
func matchKind(s string) bool {
	if s == "" || !isLetter(s[0]) || s[len(s)-1] == '-' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isLetter(c) && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
