# Stand-in used only while recording: the recorder's own Coverage must stay the only one.
module SimpleCov
  def self.start(*) = nil
  def self.method_missing(*) = nil
  def self.respond_to_missing?(*) = true
end
