package settings

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/mnemo-agent/mnemo"
	"github.com/mnemo-agent/mnemo/agent/text"
)

// Common is the part of every adapter's Config that is checked the same
// way: the API address, the channel memory setting, the identities and the
// handler.
type Common struct {
	Platform      string  // "slack": the error prefix, the identities' prefix, <Platform>.channelMemory
	APIURLVar     string  // the variable that sets APIURL, for the error: "SLACK_API_URL"
	DefaultAPIURL string  // what an empty APIURL means
	APIURL        *string // filled in: the default when empty, and a final "/"
	ChannelMemory *string // filled in: the default when empty
	Identities    map[string]string
	IdentityForm  string                    // what an account looks like, for the error
	ValidAccount  func(account string) bool // checks one identity's account
	Handler       mnemo.Handler
}

// Check checks s, fills in the defaults of APIURL and ChannelMemory, and
// returns the API URL parsed, its path ending in "/" (the platforms'
// clients append the method or route to it). Errors name the variable or
// setting at fault and say how to fix it.
func (s Common) Check() (*url.URL, error) {
	if *s.APIURL == "" {
		*s.APIURL = s.DefaultAPIURL
	}
	u, err := url.Parse(*s.APIURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("%s: %s %q is not an http(s) URL; leave it unset for %s", s.Platform, s.APIURLVar, text.RedactURLs(*s.APIURL), s.DefaultAPIURL)
	}
	if !strings.HasSuffix(*s.APIURL, "/") {
		*s.APIURL += "/"
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	if *s.ChannelMemory, err = ChannelMemory(s.Platform+".channelMemory", *s.ChannelMemory); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Platform, err)
	}
	if err := CheckIdentities(s.Platform, s.IdentityForm, s.Identities, s.ValidAccount); err != nil {
		return nil, err
	}
	if s.Handler == nil {
		return nil, errors.New(s.Platform + ": config is missing Handler")
	}
	return u, nil
}
