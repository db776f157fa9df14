# keyplan corpus recorder for redis-rb 4.x (a development tool, not run by CI).
#
#   KEYPLAN_REC_OUT=dir KEYPLAN_REC_ROOT=pkgdir RUBYOPT="-r/path/to/record.rb" ruby ...
#
# Prepends modules onto redis-rb where commands leave: Redis::Client#call and #call_loop (every
# command sent at once, blocking ones included, and the EVAL/EVALSHA of scripts), #call_pipelined
# (a pipelined or multi block as it is sent, with every queued command), Redis::Pipeline#initialize
# (the frame that opened the block) and Redis::Pipeline#call (the frame that queued each command).
# Each event is one JSON line in KEYPLAN_REC_OUT/events-<pid>.jsonl, in the shape summarise.py
# reads: command names and their arguments (strings, cut at 300 characters); summarise.py asks a
# real server (COMMAND GETKEYS) for the keys, as for the JavaScript recorder. A frame is the first
# one outside redis-rb, this file, Ruby's standard library (Monitor, DelegateClass), test doubles
# (rspec-mocks, mocha) and, unless they are the package recorded, redis-namespace, redis-store
# and connection_pool's wrapper: its file relative to KEYPLAN_REC_ROOT when it lies there.
#
# With KEYPLAN_REC_ROOT set, the lines of files under that root that ran are written at exit to
# lines-<pid>.txt (Ruby's Coverage in oneshot_lines mode, started before the package loads).
require "json"

module KeyplanRecorder
  OUT = ENV["KEYPLAN_REC_OUT"]
  ROOT = ENV["KEYPLAN_REC_ROOT"] && (File.realpath(ENV["KEYPLAN_REC_ROOT"]) rescue ENV["KEYPLAN_REC_ROOT"]) + "/"
  MAX_PER_SITE = 40
  SKIP = %w[MULTI EXEC DISCARD INFO PING SELECT CLIENT SCRIPT QUIT HELLO AUTH READONLY SUBSCRIBE PSUBSCRIBE
            UNSUBSCRIBE PUNSUBSCRIBE FLUSHDB FLUSHALL CONFIG DBSIZE TIME KEYS SCAN ECHO].freeze
  # Test doubles that wrap a client's methods: a spy's wrapper is not the caller.
  WRAPPERS = %r{/(rspec-mocks[^/]*|mocha[^/]*|minitest[^/]*/mock)(/|\.rb)}
  # Libraries that pass a package's calls on to redis-rb (redis-namespace's Redis::Namespace,
  # redis-store's Redis::Store and Redis::DistributedStore, whose modules override commands and
  # call super; connection_pool's Wrapper): skipped like the client, unless they are the package
  # recorded.
  PASSERS = %r{/redis/namespace\.rb\z|/redis/(store|distributed_store)(/[a-z_]+)?\.rb\z|/connection_pool/wrapper\.rb\z}
  STDLIB = (RbConfig::CONFIG["rubylibdir"] + "/").freeze
  THIS = File.realpath(__FILE__)

  @fd = nil
  @pid = nil
  @seen = {}
  @real = {}
  @client_dirs = []
  @lock = Mutex.new

  class << self
    attr_reader :client_dirs

    def realpath(f)
      @real[f] ||= begin
        File.realpath(f)
      rescue StandardError
        f
      end
    end

    def emit(obj, site)
      @lock.synchronize do
        if @pid != Process.pid
          @fd&.close rescue nil
          @fd = File.open(File.join(OUT, "events-#{Process.pid}.jsonl"), "a")
          @fd.sync = true
          @pid = Process.pid
          @seen = {}
        end
        n = @seen[site] || 0
        @seen[site] = n + 1
        return if n >= MAX_PER_SITE

        @fd.write(JSON.generate(obj) + "\n")
      end
    rescue StandardError => e
      warn "keyplan recorder: #{e}"
    end

    # The first frame outside redis-rb, this file, the standard library and test doubles.
    def frame
      via = nil
      caller_locations(2).each do |loc|
        path = loc.absolute_path || loc.path
        next if path.nil? || path.start_with?("<internal:")

        rp = realpath(path)
        in_root = !ROOT.nil? && rp.start_with?(ROOT)
        if rp == THIS || @client_dirs.any? { |d| rp.start_with?(d) } || rp.start_with?(STDLIB) || WRAPPERS.match?(rp) ||
           (!in_root && PASSERS.match?(rp))
          via = "#{File.basename(rp)}:#{loc.base_label}"
          next
        end
        return { "file" => in_root ? rp[ROOT.length..] : rp, "line" => loc.lineno, "in_root" => in_root,
                 "func" => loc.base_label.to_s, "via" => via }
      end
      nil
    end

    def str(a)
      s = a.is_a?(String) ? a.dup.force_encoding(Encoding::BINARY) : a.to_s
      s = s[0, 300] if s.length > 300
      s.encode("UTF-8", invalid: :replace, undef: :replace)
    end

    def cmd_of(command)
      name, *args = Array(command).flatten
      { "cmd" => name.to_s.upcase, "args" => args.map { |a| str(a) } }
    end

    def sitekey(*frames)
      frames.map { |f| f ? "#{f['file']}:#{f['line']}" : "-" }.join("|")
    end

    def command(command)
      c = cmd_of(command)
      return if SKIP.include?(c["cmd"])

      at = frame
      emit(c.merge("t" => "command", "at" => at), "c#{c['cmd']}#{sitekey(at)}#{c['args'].length}") if at
    rescue StandardError => e
      warn "keyplan recorder: #{e}"
    end

    def pipeline(pipeline)
      futures = pipeline.futures.reject { |f| %w[MULTI EXEC].include?(f._command.first.to_s.upcase) }
      return if futures.empty?

      send = frame
      return unless send

      open = pipeline.instance_variable_get(:@__keyplan_open)
      tx = pipeline.is_a?(Redis::Pipeline::Multi)
      cmds = futures.map { |f| cmd_of(f._command).merge("at" => f.instance_eval { @__keyplan_at }) }
      emit({ "t" => "pipeline", "transaction" => tx, "open" => open, "send" => send, "commands" => cmds },
           "p#{sitekey(open, send)}#{cmds.map { |c| "#{c['cmd']}#{c['args'].length}" }.join[0, 400]}")
    rescue StandardError => e
      warn "keyplan recorder: #{e}"
    end

    def wrap!
      return if defined?(@wrapped) && @wrapped
      return unless defined?(::Redis::Client) && defined?(::Redis::Pipeline)

      @wrapped = true
      dir = File.dirname(realpath(::Redis::Client.instance_method(:call).source_location.first))
      @client_dirs << File.dirname(dir) + "/" # .../lib/ of redis-rb
      ::Redis::Client.prepend(ClientHook)
      ::Redis::Pipeline.prepend(PipelineHook)
    end

    def write_lines
      return unless ROOT && defined?(::Coverage) && ::Coverage.running?

      res = ::Coverage.result(stop: false, clear: true)
      File.open(File.join(OUT, "lines-#{Process.pid}.txt"), "a") do |f|
        res.each do |path, cov|
          rp = realpath(path)
          next unless rp.start_with?(ROOT)

          rel = rp[ROOT.length..]
          lines = cov.is_a?(Hash) ? (cov[:oneshot_lines] || []) : cov.each_with_index.select { |n, _| n && n > 0 }.map { |_, i| i + 1 }
          lines.each { |n| f.write("#{rel}\t#{n}\n") }
        end
      end
    rescue StandardError => e
      warn "keyplan recorder: lines: #{e}"
    end
  end

  module ClientHook
    def call(command, *rest, &block)
      KeyplanRecorder.command(command)
      super
    end

    def call_loop(command, *rest, &block)
      KeyplanRecorder.command(command)
      super
    end

    def call_pipelined(pipeline)
      KeyplanRecorder.pipeline(pipeline)
      super
    end
  end

  module PipelineHook
    def initialize(*args, **kw)
      super
      @__keyplan_open = KeyplanRecorder.frame
    end

    def call(command, *rest, **kw, &block)
      future = super
      at = KeyplanRecorder.frame
      # Redis::Future is a BasicObject: instance_eval is what it has
      future.instance_eval { @__keyplan_at = at } if future.is_a?(::Redis::Future)
      future
    end
  end
end

if KeyplanRecorder::OUT
  require "fileutils"
  FileUtils.mkdir_p(KeyplanRecorder::OUT)
  if KeyplanRecorder::ROOT
    require "coverage"
    begin
      Coverage.start(oneshot_lines: true)
    rescue StandardError => e
      warn "keyplan recorder: coverage: #{e}"
    end
    at_exit { KeyplanRecorder.write_lines }
  end
  # Wrap redis-rb once it is loaded, whoever requires it and however (require, require_relative,
  # Bundler): a TracePoint on class bodies sees Redis::Future's (the last of pipeline.rb) end.
  # (Loaded already when a command line's -r came before RUBYOPT's: wrapped at once; but then
  # the package's files loaded so far are not in the executed lines, so require it in -e.)
  KeyplanRecorder.wrap! if defined?(::Redis::Future)
  name_of = Module.instance_method(:name)
  tp = TracePoint.new(:end) do |t|
    if name_of.bind_call(t.self) == "Redis::Future"
      KeyplanRecorder.wrap!
      tp.disable
    end
  end
  tp.enable
end
