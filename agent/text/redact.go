package text

// userinfoRE matches the user and password part of a URL ("scheme://user:pass@").
var userinfoRE = NewRegexp(`(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#\s@]*@`)

// RedactURLs removes credentials written into URLs
// (http://user:pass@host → http://…@host) anywhere in s, so that an
// address from OPENAI_BASE_URL, SLACK_API_URL or DISCORD_API_URL can be
// logged or put in an error.
func RedactURLs(s string) string {
	return userinfoRE.Get().ReplaceAllString(s, "${1}…@")
}
