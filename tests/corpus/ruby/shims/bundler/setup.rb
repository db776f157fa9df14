# Stand-in used only while recording: the suite runs on Debian's packages, not a Gemfile's.
require "bundler"
