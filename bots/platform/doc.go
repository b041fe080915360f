// Package platform is how a chat platform plugs into mnemo: one
// registration (Platform) that hands the app what the platform holds — its
// intake journal as a forget holder, its configuration section, its access
// rules — and makes its adapter. bots/registry lists the registrations;
// nothing between the command line and the platforms names one of them.
package platform
