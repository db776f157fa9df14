# Stand-in used only while recording: the suite runs on Debian's packages, not a Gemfile's, so
# Bundler's setup and require do nothing (the suites require what they use).
module Bundler
  def self.setup(*) = nil
  def self.require(*) = nil
end
